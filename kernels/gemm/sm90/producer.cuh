#pragma once
// The producer of the pipeline: one thread streams the A and B tiles (and A's block scales) of
// every k-block of its units through the ring of kStages shared-memory stages with TMA. A stage is
// refilled once the consumers of every CTA it fills (both of a pair, three of a quad) have
// released it on its empty barrier; it is ready for them once its bytes have landed on its full
// barrier. Each CTA sharing an operand loads half of it for both (multicast).
#include "gemm/sm90/scheduler.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/sync.cuh"
#include "ptx/tma.cuh"

namespace gf {

template <class Cfg>
struct Producer : Traits<Cfg> {
  using T = Traits<Cfg>;
  using T::BK, T::BM, T::BN, T::kCluster, T::kPairM, T::kPairN, T::kStageA, T::kStageB, T::kStages, T::kStageScales,
      T::rank_m, T::rank_n, T::a_peers, T::b_peers;
  using Unit = typename Scheduler<Cfg>::Unit;

  static __device__ __forceinline__ void produce(const GemmParams& p, u8* sa, u8* sb, float* sfa, u64* full, u64* empty,
                                                 int units, int rank) {
    ptx::tma_prefetch_desc(&p.a);
    ptx::tma_prefetch_desc(&p.b);
    if (kStageScales) ptx::tma_prefetch_desc(&p.sfa);
    int it = 0;
    for (int unit = blockIdx.x / kCluster; unit < units; unit += gridDim.x / kCluster) {
      const Unit u = Scheduler<Cfg>::unit_at(p, unit, rank);
      for (int kb = u.kb_begin; kb < u.kb_end; ++kb, ++it) {
        const int s = it % kStages;
        ptx::mbar_wait(&empty[s], ((it / kStages) & 1) ^ 1);
        ptx::mbar_arrive_expect_tx(&full[s], kStageA + kStageB + kStageScales);
        u8* a = sa + s * kStageA;
        u8* b = sb + s * kStageB;
        if (kPairN) {
          constexpr int kHalf = BM / 2;
          ptx::tma_load_3d_multicast(a + rank_n(rank) * kHalf * 128, &p.a, &full[s], kb * BK,
                                     u.m0 + rank_n(rank) * kHalf, u.b, a_peers(rank));
        } else {
          ptx::tma_load_3d(a, &p.a, &full[s], kb * BK, u.m0, u.b);
        }
        load_b(p, b, &full[s], kb, u, rank);
        // A's block scales of the tile's rows (k-block-major, from the 16-byte boundary below the
        // first): each CTA of a pair loads its own.
        if constexpr (kStageScales > 0) {
          constexpr int kBox = gemm_scale_box(BM);
          const int start = Scheduler<Cfg>::first_scale(p, u, kb) & ~3;
#pragma unroll
          for (int j = 0; j < gemm_scale_loads(BM); ++j)
            ptx::tma_load_1d(sfa + s * (kStageScales / 4) + j * kBox, &p.sfa, &full[s], start + j * kBox);
        }
      }
    }
    // Every load issued: the stream's next kernel may start launching (programmatic dependent
    // launch), its prologue and weight prefetch overlapping this grid's last tiles.
    if (p.pdl_trigger == kPdlAfterLoads) ptx::launch_dependents();
  }

  // A TN tile's B in two halves of BN/2 rows: gate rows [j0, j0 + BN/2) and up rows
  // [N/2 + j0, ...) for a split gate, else the tile's own two halves.
  static __device__ __forceinline__ int first_b_row(const Unit& u) {
    return Cfg::kGate == GateKind::split ? u.n0 / 2 : u.n0;
  }
  static __device__ __forceinline__ int second_b_row(const GemmParams& p, const Unit& u) {
    return Cfg::kGate == GateKind::split ? p.n / 2 + u.n0 / 2 : u.n0 + BN / 2;
  }

  // Before the stream's previous kernel is done (programmatic dependent launch): the first
  // k-blocks of this CTA's first unit of the weights (B; A under swap-AB) into L2. L2 is
  // coherent, so even weights that kernel writes are read right later; the prefetch only saves
  // DRAM latency.
  static __device__ __forceinline__ void prefetch_weights(const GemmParams& p, int units, int rank) {
    const int unit = blockIdx.x / kCluster;
    if (Cfg::kNN || unit >= units) return;
    const Unit u = Scheduler<Cfg>::unit_at(p, unit, rank);
    if constexpr (T::kSwapAB) {
      for (int kb = u.kb_begin; kb < min(u.kb_end, u.kb_begin + kStages); ++kb)
        ptx::tma_prefetch_l2(&p.a, kb * BK, u.m0 + rank_n(rank) * (BM / 2), u.b);
      return;
    }
    const int first = first_b_row(u), second = second_b_row(p, u);
    for (int kb = u.kb_begin; kb < min(u.kb_end, u.kb_begin + kStages); ++kb) {
      if (kPairM) {
        ptx::tma_prefetch_l2(&p.b, kb * BK, rank_m(rank) ? second : first, u.b);
      } else {
        ptx::tma_prefetch_l2(&p.b, kb * BK, first, u.b);
        if (Cfg::kGate == GateKind::split) ptx::tma_prefetch_l2(&p.b, kb * BK, second, u.b);
      }
    }
  }

  // The B tile of k-block kb: whole, or (kPairM) this CTA's half of it, multicast to its neighbour along M.
  static __device__ __forceinline__ void load_b(const GemmParams& p, u8* b, u64* full, int kb, const Unit& u,
                                                int rank) {
    if (Cfg::kNN) {
      constexpr int kBoxes = BN / 64, kMine = kPairM ? kBoxes / 2 : kBoxes;
#pragma unroll
      for (int i = 0; i < kMine; ++i) {
        const int j = rank_m(rank) * kMine + i;
        if (kPairM)
          ptx::tma_load_3d_multicast(b + j * 64 * kGemmRowBytes, &p.b, full, u.n0 + 64 * j, kb * BK, u.b,
                                     b_peers(rank));
        else
          ptx::tma_load_3d(b + j * 64 * kGemmRowBytes, &p.b, full, u.n0 + 64 * j, kb * BK, u.b);
      }
      return;
    }
    const int first = first_b_row(u), second = second_b_row(p, u);
    if (kPairM) {
      ptx::tma_load_3d_multicast(b + rank_m(rank) * (BN / 2) * kGemmRowBytes, &p.b, full, kb * BK,
                                 rank_m(rank) ? second : first, u.b, b_peers(rank));
    } else if (Cfg::kGate == GateKind::split) {
      ptx::tma_load_3d(b, &p.b, full, kb * BK, first, u.b);
      ptx::tma_load_3d(b + BN / 2 * kGemmRowBytes, &p.b, full, kb * BK, second, u.b);
    } else {
      ptx::tma_load_3d(b, &p.b, full, kb * BK, u.n0, u.b);
    }
  }
};

}  // namespace gf

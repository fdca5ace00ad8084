#pragma once
// The Hopper GEMM: D = epilogue(A B^T) (layout TN) or epilogue(A B) (layout NN).
//
// One CTA per SM, persistent over work units (an output tile, or one K-slice of it with split-K).
// Warpgroup 0 is the producer: one thread streams A and B tiles through a ring of shared-memory
// stages with TMA. The other warpgroups are consumers: they run wgmma on the stages as they land
// and hand each stage back once its reads are done. The epilogue runs on the accumulators in
// registers and stores D directly, or (kStoreBoxes > 0) through 128-byte-swizzled staging boxes
// in shared memory and TMA stores, which leaves the consumers sooner. There a C input (residual)
// arrives by TMA in the staging boxes, the first of them loaded during the tile's main loop.
//
// Two schedules. Cooperative: both consumers work on every tile, each on BM/2 of its rows.
// Ping-pong: the consumers take alternate tiles, each all BM rows, and take turns at the main loop
// (named barriers kBarTurn + consumer pass the turn), so one consumer's epilogue overlaps the other's main
// loop. The turns also keep each consumer's barrier waits within one phase of the ring: a parity
// wait cannot tell phases two apart.
//
// With kCluster = 2, CTA pairs take adjacent tiles and share an operand, each CTA loading half of
// it for both (TMA multicast): vertically adjacent tiles (kClusterAlongM) share the B block,
// horizontally adjacent ones the A block. With kCluster = 4, a 2x2 quad of tiles shares both:
// each CTA its A block with its neighbour along N, its B block with its neighbour along M. A stage
// is then refilled only once the consumers of every CTA it fills have released it.
//
// The parts: traits.cuh (the shape derived from Cfg), scheduler.cuh (work units), producer.cuh
// (the TMA ring), mma.cuh (wgmma on a stage), scales.cuh (fp8 dequantisation and promotion),
// epilogue_regs.cuh and epilogue_tma.cuh, split_k.cuh;
// this file holds the consumers' mainloop and the kernel's body. The instantiating source
// (backends/gemm/native/codegen.cpp) defines a Cfg struct with the named constants traits.cuh reads.
#include "gemm/sm90/epilogue_regs.cuh"
#include "gemm/sm90/epilogue_tma.cuh"
#include "gemm/sm90/mma.cuh"
#include "gemm/sm90/producer.cuh"
#include "gemm/sm90/scales.cuh"
#include "gemm/sm90/scheduler.cuh"
#include "gemm/sm90/split_k.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/sync.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"

namespace gf {

template <class Cfg>
struct Gemm : Traits<Cfg> {
  using T = Traits<Cfg>;
  using T::kAcc, T::kCluster, T::kConsumers, T::kMmaM, T::kPingpong, T::kPrefetchC, T::kPromote, T::kPromoteAhead,
      T::kPromoteHalves, T::kReleasesPerReader, T::kSplitK, T::kStageA, T::kStageB, T::kStageReaders, T::kStages,
      T::kStageScales, T::kStaging, T::kStoreTma;
  using Unit = typename Scheduler<Cfg>::Unit;
  // Promotion ahead and by halves: k-blocks between two drains of the wgmma (an even count).
  static constexpr int kPromoteRun = 4;

  template <int kRows, int kCols>
  static __device__ __forceinline__ void zero(float (&acc)[kRows][kCols]) {
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int c = 0; c < kCols; ++c) acc[r][c] = 0.0f;
  }

  // A stage is free once every CTA that multicasts into it has been told: in a quad this CTA and
  // its neighbours along M (rank ^ 1) and N (rank ^ 2), not the one across.
  static __device__ __forceinline__ void release(u64* empty) {
    if constexpr (kCluster == 1) {
      ptx::mbar_arrive(empty);
    } else if constexpr (T::kQuad) {
      const u32 rank = ptx::cluster_cta_rank();
      ptx::mbar_arrive_cluster(empty, rank);
      ptx::mbar_arrive_cluster(empty, rank ^ 1u);
      ptx::mbar_arrive_cluster(empty, rank ^ 2u);
    } else {
#pragma unroll
      for (int r = 0; r < kCluster; ++r) ptx::mbar_arrive_cluster(empty, r);
    }
  }
  // A consumer is done with a stage once its wgmma are (waited for): its leader says so. With
  // block scales each warp has read its rows' scales there too, so each warp says so.
  static __device__ __forceinline__ void release_stage(u64* empty, bool leader) {
    if constexpr (kReleasesPerReader > 1) {
      __syncwarp();
      if (threadIdx.x % 32 == 0) release(empty);
    } else if (leader) {
      release(empty);
    }
  }

  // Promotion ahead's and by halves' schedule of a unit's k-blocks after the first: straight-line
  // runs of kPromoteRun, then pairs, then one left, each run ending drained. Steps alternate
  // between the two sets: even(kb, first_of_run), odd(kb). True where the last k-block was an
  // even step (its products in the even steps' set).
  template <class Even, class Odd, class Drain>
  static __device__ __forceinline__ bool in_runs(int kb, int kb_end, Even even, Odd odd, Drain drain) {
    for (; kb + kPromoteRun - 1 < kb_end; kb += kPromoteRun) {
#pragma unroll
      for (int j = 0; j < kPromoteRun; j += 2) {
        even(kb + j, j == 0);
        odd(kb + j + 1);
      }
      drain();
    }
    for (; kb + 1 < kb_end; kb += 2) {
      even(kb, true);
      odd(kb + 1);
      drain();
    }
    if (kb < kb_end) {  // one k-block left
      even(kb, true);
      drain();
      return true;
    }
    return false;
  }

  static __device__ __forceinline__ void consume(const GemmParams& p, const u8* sa, const u8* sb, const float* sfa,
                                                 u64* full, u64* empty, int units, volatile int* last_flags,
                                                 u8* staging, u64* c_full) {
    // Read through a shuffle from lane 0 the compiler knows it is warp-uniform and keeps it, and the
    // descriptors built from it, in uniform registers.
    const int consumer = __shfl_sync(0xffffffffu, int(threadIdx.x / 128) - 1, 0);
    const bool leader = threadIdx.x % 128 == 0;
    u32 c_phase = 0;
    const u64 da = Mma<Cfg>::desc_a(sa, consumer), db = Mma<Cfg>::desc_b(sb);
    float acc[kMmaM][kAcc];
    constexpr bool kWholeParts = kPromote && !kPromoteHalves;
    float part[kWholeParts ? kMmaM : 1][kWholeParts ? kAcc : 1];             // one k-block's products, to promote
    float part2[kPromoteAhead ? kMmaM : 1][kPromoteAhead ? kAcc : 1];        // the next one's, promoting ahead
    float left[kPromoteHalves ? kMmaM : 1][kPromoteHalves ? kAcc / 2 : 1];   // by halves: the left half's
    float right[kPromoteHalves ? kMmaM : 1][kPromoteHalves ? kAcc / 2 : 1];  // and the right half's
    const int rank = kCluster > 1 ? int(ptx::cluster_cta_rank()) : 0;
    const int first = blockIdx.x / kCluster, stride = gridDim.x / kCluster;
    const int local_units = first < units ? (units - first + stride - 1) / stride : 0;
    int it = 0, local = 0;
    for (int unit = first; unit < units; unit += stride, ++local) {
      const Unit u = Scheduler<Cfg>::unit_at(p, unit, rank);
      if (kPingpong && local % 2 != consumer) {
        it += u.kb_end - u.kb_begin;  // the other consumer's stages
        continue;
      }
      // Ping-pong: wait for the turn (the other consumer finished the previous unit's main loop).
      if (kPingpong && local > 0) ptx::named_barrier(kBarTurn + consumer, 256);
      // The fp8 scales, the bias, and C's elements where the register epilogue's are few, into
      // registers ahead of the main loop.
      typename Scales<Cfg>::Ahead scales_ahead;
      Scales<Cfg>::load_ahead(p, u, consumer, scales_ahead);
      typename TmaEpilogue<Cfg>::Ahead tma_ahead;
      if constexpr (kStoreTma) TmaEpilogue<Cfg>::load_ahead(p, u, consumer, tma_ahead);
      typename RegisterEpilogue<Cfg>::Ahead regs_ahead;
      if constexpr (!kStoreTma) RegisterEpilogue<Cfg>::load_ahead(p, u, consumer, regs_ahead);
      // Ping-pong: the other consumer's turn once this tile's last wgmma are issued (the tensor
      // cores take the groups in order), ahead of their wait. After it, ptxas schedules the
      // handoff, which nothing reads, below whatever of the epilogue it hoists (the scales' loads,
      // the last promotion, the first pieces' GELU), and the tensor cores idle that long every tile.
      auto hand_over_after = [&](int kb) {  // kb: the k-block whose wgmma were just issued
        if (kPingpong && kb + 1 == u.kb_end && local + 1 < local_units)
          ptx::named_barrier_arrive(kBarTurn + (1 - consumer), 256);
      };
      // C's first boxes load a few k-blocks in, when the last tile's stores have read the staging.
      const int c_kb = min(u.kb_begin + 2, u.kb_end - 1);
      auto prefetch_c = [&](int kb) {
        if (kPrefetchC && leader && kb == c_kb) {
          ptx::bulk_wait_read();
          TmaEpilogue<Cfg>::load_c(p, u, consumer, staging, &c_full[consumer], 0);
        }
      };
      float after_release = 0.0f;  // 0 or -0 once the last stage is released (below)
      if constexpr (kPromoteAhead) {
        // Two sets of partial accumulators taken in turn, so that a k-block's products are promoted
        // while the next k-block's wgmma run, and the wgmma drain (wait 0) only at the end of a run
        // of kPromoteRun k-blocks: in between, a k-block's wgmma are issued before the one before
        // it is waited for (wait 1). ptxas follows the groups in straight-line code only (a group
        // in flight across the loop's back edge, or a set written while a wgmma may, serializes
        // every wgmma: C7514), hence the runs, unrolled. Each set's factors load when its stage
        // has landed.
        using Factors = typename Scales<Cfg>::BlockFactors;
        Factors f, f2;
        int s_last = 0;  // the stage of the k-block issued last
        auto issue = [&](int kb, float(&into)[kMmaM][kAcc], Factors& into_factors) {
          prefetch_c(kb);
          const int s = it % kStages, phase = (it / kStages) & 1;
          ++it;
          ptx::mbar_wait(&full[s], phase);
          into_factors = Scales<Cfg>::block_factors(p, u, consumer, kb, Scales<Cfg>::stage_scales(p, u, sfa, s, kb));
          ptx::wgmma_fence();
          Mma<Cfg>::mma_stage(into, ptx::desc_advance(da, s * kStageA), ptx::desc_advance(db, s * kStageB), false);
          ptx::wgmma_commit();
          hand_over_after(kb);
          const int before = s_last;
          s_last = s;
          return before;
        };
        // Between runs `part` holds the finished products of the k-block before, f its factors.
        // A run's even steps issue into part2 and promote part; its odd steps the other way round.
        auto even_step = [&](int kb, bool first) {
          const int s = issue(kb, part2, f2);
          if (!first) {
            ptx::wgmma_wait<1>();
            release_stage(&empty[s], leader);
          }
          Scales<Cfg>::promote(acc, part, f, u);
        };
        auto odd_step = [&](int kb) {
          const int s = issue(kb, part, f);
          ptx::wgmma_wait<1>();
          release_stage(&empty[s], leader);
          Scales<Cfg>::promote(acc, part2, f2, u);
        };
        auto drain = [&] {
          ptx::wgmma_wait<0>();
          release_stage(&empty[s_last], leader);
        };
        zero(acc);
        issue(u.kb_begin, part, f);
        drain();
        if (in_runs(u.kb_begin + 1, u.kb_end, even_step, odd_step, drain))
          Scales<Cfg>::promote(acc, part2, f2, u);
        else
          Scales<Cfg>::promote(acc, part, f, u);
      } else if constexpr (kPromoteHalves) {
        // The k-block's wgmma in two groups, the left and the right half of the tile's columns,
        // each into a set of its own, one group always in flight: while the left half's run, the
        // previous k-block's right half is promoted, and while the right half's run, this
        // k-block's left half (wait 1 before each). As promotion ahead's, in straight-line runs of
        // kPromoteRun k-blocks, each ending drained; two factor sets taken in turn, B's factors loaded a
        // k-block ahead.
        using Factors = typename Scales<Cfg>::BlockFactors;
        Factors f, f2;
        float b_next[Scales<Cfg>::kBBlocks];
        Scales<Cfg>::load_b_factors(p, u, u.kb_begin, b_next);
        int s_last = 0;  // the stage of the k-block issued last
        // drained: the right half before (if any) is done and its stage released.
        auto step = [&](int kb, Factors& fac, const Factors& prev, bool drained, bool has_prev) {
          prefetch_c(kb);
          const int s = it % kStages, phase = (it / kStages) & 1;
          ++it;
          ptx::mbar_wait(&full[s], phase);
          Scales<Cfg>::take_factors(p, u, consumer, kb, Scales<Cfg>::stage_scales(p, u, sfa, s, kb), fac, b_next);
          const u64 da_s = ptx::desc_advance(da, s * kStageA), db_s = ptx::desc_advance(db, s * kStageB);
          ptx::wgmma_fence();
          Mma<Cfg>::template mma_half<0>(left, da_s, db_s);
          ptx::wgmma_commit();
          if (has_prev) {
            if (!drained) {
              ptx::wgmma_wait<1>();
              release_stage(&empty[s_last], leader);
            }
            Scales<Cfg>::template promote_half<1>(acc, right, prev, u);
          }
          ptx::wgmma_fence();
          Mma<Cfg>::template mma_half<1>(right, da_s, db_s);
          ptx::wgmma_commit();
          hand_over_after(kb);
          ptx::wgmma_wait<1>();
          Scales<Cfg>::template promote_half<0>(acc, left, fac, u);
          s_last = s;
        };
        auto drain = [&] {
          ptx::wgmma_wait<0>();
          release_stage(&empty[s_last], leader);
        };
        zero(acc);
        step(u.kb_begin, f, f2, true, false);
        drain();
        auto even = [&](int kb, bool first) { step(kb, f2, f, first, true); };
        auto odd = [&](int kb) { step(kb, f, f2, false, true); };
        // The last k-block's right half: its factors are f2 after an even step, else f.
        if (in_runs(u.kb_begin + 1, u.kb_end, even, odd, drain))
          Scales<Cfg>::template promote_half<1>(acc, right, f2, u);
        else
          Scales<Cfg>::template promote_half<1>(acc, right, f, u);
      } else if constexpr (kPromote) {
        // Each k-block's products land in their own accumulators and are added to acc once done,
        // times its factors: A's read while its wgmma run, B's loaded a k-block ahead (from L2, as
        // long as the wgmma take).
        typename Scales<Cfg>::BlockFactors f;
        float b_next[Scales<Cfg>::kBBlocks];
        Scales<Cfg>::load_b_factors(p, u, u.kb_begin, b_next);
        zero(acc);
        for (int kb = u.kb_begin; kb < u.kb_end; ++kb, ++it) {
          prefetch_c(kb);
          const int s = it % kStages;
          ptx::mbar_wait(&full[s], (it / kStages) & 1);
          Scales<Cfg>::take_factors(p, u, consumer, kb, Scales<Cfg>::stage_scales(p, u, sfa, s, kb), f, b_next);
          ptx::wgmma_fence();
          Mma<Cfg>::mma_stage(part, ptx::desc_advance(da, s * kStageA), ptx::desc_advance(db, s * kStageB), false);
          ptx::wgmma_commit();
          hand_over_after(kb);
          ptx::wgmma_wait<0>();
          release_stage(&empty[s], leader);
          Scales<Cfg>::promote(acc, part, f, u);
        }
      } else {
        int prev = -1;
        for (int kb = u.kb_begin; kb < u.kb_end; ++kb, ++it) {
          prefetch_c(kb);
          const int s = it % kStages;
          ptx::mbar_wait(&full[s], (it / kStages) & 1);
          ptx::wgmma_fence();
          Mma<Cfg>::mma_stage(acc, ptx::desc_advance(da, s * kStageA), ptx::desc_advance(db, s * kStageB),
                              kb != u.kb_begin);
          ptx::wgmma_commit();
          hand_over_after(kb);
          // One group stays in flight: the previous stage's reads are done once this returns.
          ptx::wgmma_wait<1>();
          if (prev >= 0 && leader) release(&empty[prev]);
          prev = s;
        }
        ptx::wgmma_wait<0>();
        if (prev >= 0 && leader) release(&empty[prev]);
        // A ping-pong epilogue's transcendentals after the release: ptxas placed the release, on
        // which nothing depends, below a GELU epilogue's first pieces (~440 instructions), and the
        // producer, waiting for this stage, held up the other consumer's main loop. Scales with
        // alpha in them carry the dependency in their factors, the rest in each accumulator.
        if (kPingpong && T::kTranscendental && prev >= 0) {
          after_release = ptx::mbar_zero_after(&empty[prev]);
          if constexpr (!T::kAlphaInScales) {
#pragma unroll
            for (int mm = 0; mm < kMmaM; ++mm)
#pragma unroll
              for (int i = 0; i < kAcc; ++i) acc[mm][i] += after_release;
          }
        }
      }
#pragma unroll
      for (int mm = 0; mm < kMmaM; ++mm) ptx::fence_registers(acc[mm]);
      Scales<Cfg>::dequantize(p, acc, u, consumer, scales_ahead, after_release);
      if (kSplitK > 1 && !SplitK<Cfg>::reduce(p, acc, u, consumer, last_flags)) continue;
      if constexpr (kStoreTma)
        TmaEpilogue<Cfg>::store(p, acc, u, consumer, staging, &c_full[consumer], c_phase, tma_ahead);
      else
        RegisterEpilogue<Cfg>::store(p, acc, u, consumer, regs_ahead);
    }
    // The shared memory must outlive the last TMA store.
    if (kStoreTma && leader) ptx::bulk_wait();
  }

  static __device__ __forceinline__ void run(const GemmParams& p) {
    extern __shared__ __align__(1024) u8 smem_raw[];
    // 128-byte swizzled tiles need 1024-byte alignment.
    u8* smem = smem_raw + ((1024 - (smem_addr(smem_raw) & 1023)) & 1023);
    u8* sa = smem;
    u8* sb = sa + kStages * kStageA;
    u8* staging = sb + kStages * kStageB;                       // 1024-aligned: whole stages before it
    float* sfa = reinterpret_cast<float*>(staging + kStaging);  // 1024-aligned: whole boxes before it
    u64* full = reinterpret_cast<u64*>(staging + kStaging + kStages * kStageScales);
    u64* empty = full + kStages;
    u64* c_full = empty + kStages;  // per consumer: its C boxes have landed
    volatile int* last_flags = reinterpret_cast<volatile int*>(c_full + 2);
    if (threadIdx.x == 0) {
      for (int s = 0; s < kStages; ++s) {
        ptx::mbar_init(&full[s], 1);
        ptx::mbar_init(&empty[s], kStageReaders * kReleasesPerReader * T::kFillers);
      }
      for (int c = 0; c < 2; ++c) ptx::mbar_init(&c_full[c], 1);
      ptx::mbar_fence_init();
    }
    // The peer's barriers must be initialised before anything is multicast into them.
    if (kCluster > 1)
      ptx::cluster_sync();
    else
      __syncthreads();
    const int units = Scheduler<Cfg>::units(p);
    // Launched early (programmatic dependent launch): the weights start for L2, then every thread
    // waits for the stream's previous kernel before it reads or writes anything else. A plain
    // launch skips the prefetch: its producer loads the same k-blocks at once.
    if (p.pdl && threadIdx.x == 0)
      Producer<Cfg>::prefetch_weights(p, units, kCluster > 1 ? int(ptx::cluster_cta_rank()) : 0);
    ptx::grid_dependency_wait();
    if (p.pdl_trigger == kPdlAtStart) ptx::launch_dependents();
    if (threadIdx.x < 128) {
      if (kConsumers > 1) ptx::regs_dealloc<40>();
      if (threadIdx.x == 0)
        Producer<Cfg>::produce(p, sa, sb, sfa, full, empty, units, kCluster > 1 ? int(ptx::cluster_cta_rank()) : 0);
    } else {
      if (kConsumers > 1) ptx::regs_alloc<232>();
      consume(p, sa, sb, sfa, full, empty, units, last_flags, staging, c_full);
    }
    // Neither CTA of a pair may exit while the other can still arrive on its barriers.
    if (kCluster > 1) ptx::cluster_sync();
  }
};

}  // namespace gf

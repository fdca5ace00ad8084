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
// (named barriers 3 and 4 pass the turn), so one consumer's epilogue overlaps the other's main
// loop. The turns also keep each consumer's barrier waits within one phase of the ring: a parity
// wait cannot tell phases two apart.
//
// With kCluster = 2, CTA pairs take adjacent tiles and share an operand, each CTA loading half of
// it for both (TMA multicast): vertically adjacent tiles (kClusterAlongM) share the B block,
// horizontally adjacent ones the A block. A stage is then refilled only once the consumers of
// both CTAs have released it.
//
// The instantiating source defines a Cfg struct with the named constants used below.
#include "epilogue/activation.cuh"
#include "gemmforge/codes.hpp"
#include "ptx/base.cuh"
#include "ptx/convert.cuh"
#include "ptx/matrix.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/sync.cuh"
#include "ptx/tma.cuh"
#include "ptx/wgmma.cuh"

namespace gf {

template <bool kCond, class T, class F>
struct Select {
  using type = T;
};
template <class T, class F>
struct Select<false, T, F> {
  using type = F;
};

struct GemmParams {
  TmaDesc a;       // A: {K, M, batch}, box {64, BM, 1}
  TmaDesc b;       // TN: {K, N, batch}, box {64, BN (BN/2 when gated split), 1}; NN: {N, K, batch}, box {64, 64, 1}
  TmaDesc d;       // kStoreTma: {out_cols, M, batch}, box {64, kWgRows, 1}
  TmaDesc c_tile;  // kStoreTma with C: as d
  void* out;
  const void* c;
  const void* bias;
  float* partials;  // split-K: one fp32 tile per work unit
  int* counters;    // split-K: arrivals per tile, zero between launches
  int m, n, k, batch;
  int out_cols;  // N, or N/2 when gated
  int tiles_m, tiles_n;
  float alpha, beta;
  int pairs_aligned;  // D rows hold whole 2-element pairs at aligned addresses
};

template <class Cfg>
struct Gemm {
  static constexpr int BM = Cfg::kBlockM, BN = Cfg::kBlockN, BK = 64;
  static constexpr int kStages = Cfg::kStages, kConsumers = Cfg::kConsumers, kSplitK = Cfg::kSplitK;
  static constexpr bool kPingpong = Cfg::kPingpong;
  static constexpr int kWgRows = kPingpong ? BM : BM / kConsumers;  // rows of the tile per consumer
  static constexpr int kStageReaders = kPingpong ? 1 : kConsumers;  // consumers that read each stage
  static constexpr int kCluster = Cfg::kCluster;
  static constexpr bool kPairM = kCluster > 1 && Cfg::kClusterAlongM;   // pairs share B
  static constexpr bool kPairN = kCluster > 1 && !Cfg::kClusterAlongM;  // pairs share A
  static constexpr int kMmaM = kWgRows / 64;                            // m64 wgmma tiles per consumer
  static constexpr int kAcc = BN / 2;                                   // f32 accumulators per thread per m64 tile
  static constexpr u32 kStageA = BM * BK * 2, kStageB = BN * BK * 2;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static_assert(kWgRows == 64 || kWgRows == 128, "Each consumer warpgroup owns 64 or 128 rows.");
  static_assert(!kPingpong || kConsumers == 2, "Ping-pong alternates two consumers.");
  static_assert(kCluster == 1 || (kCluster == 2 && kSplitK == 1), "Clusters are pairs, without split-K.");
  static_assert(!kPairM || !Cfg::kNN || BN % 128 == 0, "Sharing N-major B splits it into whole 64-column boxes.");
  static_assert(BN % 16 == 0 && BN >= 16 && BN <= 256, "wgmma takes N in [16, 256], a multiple of 16 here.");
  static_assert(!Cfg::kNN || BN % 64 == 0, "N-major B is loaded in 64-column boxes.");
  static_assert(Cfg::kGate != GateKind::split || BN % 32 == 0, "A split gate needs whole 8-column groups per half.");
  static_assert(kMmaM * kAcc <= (kConsumers == 2 ? 192 : 128), "More accumulators per thread would spill.");

  // The TMA-store epilogue stages kStoreBoxes 64-column boxes of a consumer's rows of D at a time:
  // fewer than the tile's kOutBoxes leaves shared memory for a deeper pipeline.
  static constexpr int kOutN = Cfg::kGate == GateKind::none ? BN : BN / 2;  // D columns of a tile
  static constexpr int kOutBoxes = (kOutN + 63) / 64;                   // 64-column boxes covering them
  static constexpr int kStoreBoxes = Cfg::kStoreBoxes;
  static constexpr bool kStoreTma = kStoreBoxes > 0;
  static_assert(!kStoreTma || (Cfg::kOut != DType::f32 && kOutN >= 64 && kOutBoxes % kStoreBoxes == 0 &&
                               (kOutN % 64 == 0 || Cfg::kGate == GateKind::none)),
                "The TMA-store epilogue stages 16-bit tiles in 64-column boxes (whole ones when gated).");
  static constexpr u32 kBoxBytes = kWgRows * 128;                        // one consumer's rows of one box
  static constexpr u32 kStaging = kConsumers * kStoreBoxes * kBoxBytes;  // per consumer: its rows
  static constexpr bool kLoadC = kStoreTma && Cfg::kHasC;
  // The first boxes of C load while the main loop runs; not with split-K, where a slice may not
  // reach the epilogue.
  static constexpr bool kPrefetchC = kLoadC && kSplitK == 1;

  // Stages, staging, the full/empty barriers of each stage, two C barriers, split-K flags.
  static constexpr u32 smem_bytes() {
    return 1024 + kStages * (kStageA + kStageB) + kStaging + 2 * kStages * 8 + 2 * 8 + 16;
  }
  // Which kWgRows-row part of the tile a consumer owns: its own in the cooperative schedule, the
  // whole tile (part 0) in ping-pong.
  static __device__ __forceinline__ int part(int consumer) { return kPingpong ? 0 : consumer; }

  // Consumers that share a tile synchronise on a named barrier of their own (0 is __syncthreads).
  static __device__ __forceinline__ void tile_barrier(int consumer) {
    if (kPingpong)
      ptx::named_barrier(1 + consumer, 128);
    else
      ptx::named_barrier(1, 128 * kConsumers);
  }

  // The work unit's coordinates: batch, tile row and column, K-slice.
  struct Unit {
    int b, m0, n0, kb_begin, kb_end, tile, split;
  };

  // Work units are numbered per cluster; a pair's CTAs take adjacent tile rows or columns.
  static __device__ __forceinline__ int cluster_tiles_m(const GemmParams& p) {
    return kPairM ? (p.tiles_m + 1) / 2 : p.tiles_m;
  }
  static __device__ __forceinline__ int cluster_tiles_n(const GemmParams& p) {
    return kPairN ? (p.tiles_n + 1) / 2 : p.tiles_n;
  }

  static __device__ __forceinline__ Unit unit_at(const GemmParams& p, int unit, int rank) {
    Unit u;
    const int split = unit % kSplitK;
    u.split = split;
    u.tile = unit / kSplitK;
    const int tiles_m = cluster_tiles_m(p), tiles_n = cluster_tiles_n(p);
    const int per_batch = tiles_m * tiles_n;
    u.b = u.tile / per_batch;
    const int t = u.tile % per_batch;
    // Grouped order: kGroup tiles along one dimension are swept together, so the operand
    // shared along the other dimension stays in L2.
    int mb, nb;
    if (!Cfg::kRasterN) {
      const int per_group = Cfg::kGroup * tiles_n, first = t / per_group * Cfg::kGroup;
      const int size = min(Cfg::kGroup, tiles_m - first);
      mb = first + t % per_group % size;
      nb = t % per_group / size;
    } else {
      const int per_group = Cfg::kGroup * tiles_m, first = t / per_group * Cfg::kGroup;
      const int size = min(Cfg::kGroup, tiles_n - first);
      nb = first + t % per_group % size;
      mb = t % per_group / size;
    }
    // The spare CTA of an odd last pair lands past M or N: it loads zeros and stores nothing.
    u.m0 = (kPairM ? mb * 2 + rank : mb) * BM;
    u.n0 = (kPairN ? nb * 2 + rank : nb) * BN;
    if (kCluster > 1) u.tile = u.tile * kCluster + rank;
    const int k_blocks = (p.k + BK - 1) / BK;
    u.kb_begin = split * k_blocks / kSplitK;
    u.kb_end = (split + 1) * k_blocks / kSplitK;
    return u;
  }

  static __device__ __forceinline__ void produce(const GemmParams& p, u8* sa, u8* sb, u64* full, u64* empty, int units,
                                                 int rank) {
    ptx::tma_prefetch_desc(&p.a);
    ptx::tma_prefetch_desc(&p.b);
    int it = 0;
    for (int unit = blockIdx.x / kCluster; unit < units; unit += gridDim.x / kCluster) {
      const Unit u = unit_at(p, unit, rank);
      for (int kb = u.kb_begin; kb < u.kb_end; ++kb, ++it) {
        const int s = it % kStages;
        ptx::mbar_wait(&empty[s], ((it / kStages) & 1) ^ 1);
        ptx::mbar_arrive_expect_tx(&full[s], kStageA + kStageB);
        u8* a = sa + s * kStageA;
        u8* b = sb + s * kStageB;
        if (kPairN) {
          constexpr int kHalf = BM / 2;
          ptx::tma_load_3d_multicast(a + rank * kHalf * 128, &p.a, &full[s], kb * BK, u.m0 + rank * kHalf, u.b, 0x3);
        } else {
          ptx::tma_load_3d(a, &p.a, &full[s], kb * BK, u.m0, u.b);
        }
        load_b(p, b, &full[s], kb, u, rank);
      }
    }
  }

  // The B tile of k-block kb: whole, or (kPairM) this CTA's half of it, multicast to the pair.
  static __device__ __forceinline__ void load_b(const GemmParams& p, u8* b, u64* full, int kb, const Unit& u,
                                                int rank) {
    if (Cfg::kNN) {
      constexpr int kBoxes = BN / 64, kMine = kPairM ? kBoxes / 2 : kBoxes;
#pragma unroll
      for (int i = 0; i < kMine; ++i) {
        const int j = (kPairM ? rank * kMine : 0) + i;
        if (kPairM)
          ptx::tma_load_3d_multicast(b + j * 64 * BK * 2, &p.b, full, u.n0 + 64 * j, kb * BK, u.b, 0x3);
        else
          ptx::tma_load_3d(b + j * 64 * BK * 2, &p.b, full, u.n0 + 64 * j, kb * BK, u.b);
      }
      return;
    }
    // Two halves of BN/2 rows: gate rows [j0, j0 + BN/2) and up rows [N/2 + j0, ...) for a split
    // gate, else the tile's own two halves.
    const int first = Cfg::kGate == GateKind::split ? u.n0 / 2 : u.n0;
    const int second = Cfg::kGate == GateKind::split ? p.n / 2 + u.n0 / 2 : u.n0 + BN / 2;
    if (kPairM) {
      ptx::tma_load_3d_multicast(b + rank * (BN / 2) * BK * 2, &p.b, full, kb * BK, rank ? second : first, u.b, 0x3);
    } else if (Cfg::kGate == GateKind::split) {
      ptx::tma_load_3d(b, &p.b, full, kb * BK, first, u.b);
      ptx::tma_load_3d(b + BN / 2 * BK * 2, &p.b, full, kb * BK, second, u.b);
    } else {
      ptx::tma_load_3d(b, &p.b, full, kb * BK, u.n0, u.b);
    }
  }

  // The wgmma descriptors of this consumer's rows of A and of B in stage 0; stage s and its k and
  // row steps are offsets from them (ptx::desc_advance).
  static __device__ __forceinline__ u64 desc_a(const u8* sa, int consumer) {
    return ptx::smem_desc_sw128(sa + part(consumer) * kWgRows * 128);
  }
  static __device__ __forceinline__ u64 desc_b(const u8* sb) {
    return Cfg::kNN ? ptx::smem_desc_sw128(sb, 64 * 128) : ptx::smem_desc_sw128(sb);
  }

  template <int kCols>
  static __device__ __forceinline__ void mma_stage(float (&acc)[kMmaM][kCols], u64 da, u64 db, bool accumulate) {
#pragma unroll
    for (int mm = 0; mm < kMmaM; ++mm) {
#pragma unroll
      for (int k16 = 0; k16 < BK / 16; ++k16) {
        const u64 a = ptx::desc_advance(da, mm * 64 * 128 + k16 * 32);
        const u64 b = ptx::desc_advance(db, Cfg::kNN ? k16 * 16 * 128 : k16 * 32);
        ptx::Wgmma<BN, Cfg::kIn == DType::f16, Cfg::kNN ? 1 : 0>::mma(acc[mm], a, b, accumulate || k16 > 0);
      }
    }
  }

  // D, C and the bias share the output dtype: float, or 16-bit bf16/f16 kept as raw bits.
  using Out = typename Select<Cfg::kOut == DType::f32, float, u16>::type;

  static __device__ __forceinline__ float to_float(float v) { return v; }
  static __device__ __forceinline__ float to_float(u16 v) {
    return Cfg::kOut == DType::bf16 ? ptx::bf16_to_float(v) : ptx::f16_to_float(v);
  }

  static __device__ __forceinline__ float activate(float x) { return epi::activate<true>(x, Cfg::kAct); }
  static __device__ __forceinline__ float silu(float x) { return epi::activate<true>(x, Activation::silu); }

  // Two values in the 16-bit output type, the first in the low half.
  static __device__ __forceinline__ u32 pack2(float v0, float v1) {
    return Cfg::kOut == DType::bf16 ? ptx::pack_bf16x2(v0, v1) : ptx::pack_f16x2(v0, v1);
  }

  // Writes v0 at d[0] and, if `two`, v1 at d[1]: one 4- or 8-byte store when the pair is aligned.
  static __device__ __forceinline__ void store2(Out* d, float v0, float v1, bool two, bool aligned) {
    if (Cfg::kOut == DType::f32) {
      if (two && aligned)
        *reinterpret_cast<float2*>(d) = make_float2(v0, v1);
      else {
        d[0] = v0;
        if (two) d[1] = v1;
      }
    } else {
      const u32 packed = pack2(v0, v1);
      if (two && aligned)
        *reinterpret_cast<u32*>(d) = packed;
      else {
        d[0] = u16(packed & 0xffff);
        if (two) d[1] = u16(packed >> 16);
      }
    }
  }

  // The accumulator layout of wgmma m64nN: thread t of warp w holds rows 16w + t/4 (+8) and
  // columns 8i + 2(t%4) (+1) for i < N/8, as acc[4i + {0,1}] (row) and acc[4i + {2,3}] (row + 8).
  // Per element: v = alpha * acc + beta * C + bias, then the activation or the SwiGLU gate.
  static __device__ __forceinline__ void epilogue(const GemmParams& p, float (&acc)[kMmaM][kAcc], const Unit& u,
                                                  int consumer) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x % 128 / 32;
    const bool aligned = p.pairs_aligned != 0;
    const Out* bias = static_cast<const Out*>(p.bias);
#pragma unroll
    for (int mm = 0; mm < kMmaM; ++mm) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = u.m0 + part(consumer) * kWgRows + mm * 64 + warp * 16 + lane / 4 + half * 8;
        if (row >= p.m) continue;
        const long long row_off = ((long long)u.b * p.m + row) * p.out_cols;
        Out* d = static_cast<Out*>(p.out) + row_off;
        const Out* c = static_cast<const Out*>(p.c) + row_off;
        const float row_add = Cfg::kBias == BiasKind::row ? to_float(bias[row]) : 0.0f;
        // The pre-activation value of accumulator a at GEMM column col (C only where D has it).
        auto pre = [&](float a, int col) {
          float v = p.alpha * a + row_add;
          if (Cfg::kHasC) v += p.beta * to_float(c[col]);
          if (Cfg::kBias == BiasKind::col) v += to_float(bias[col]);
          return v;
        };
        if (Cfg::kGate == GateKind::split) {
          // Columns c and c + BN/2 of the tile are a gate and its up: the same thread holds both.
#pragma unroll
          for (int i = 0; i < BN / 16; ++i) {
            const int j = u.n0 / 2 + 8 * i + 2 * (lane % 4);
            if (j >= p.out_cols) continue;
            const float* g = &acc[mm][4 * i + 2 * half];
            const float* up = &acc[mm][4 * (i + BN / 16) + 2 * half];
            const int up_col = p.n / 2 + j;
            store2(d + j, silu(pre(g[0], j)) * pre(up[0], up_col), silu(pre(g[1], j + 1)) * pre(up[1], up_col + 1),
                   j + 1 < p.out_cols, aligned);
          }
          continue;
        }
#pragma unroll
        for (int i = 0; i < BN / 8; ++i) {
          const int col = u.n0 + 8 * i + 2 * (lane % 4);
          if (col >= p.n) continue;
          const float a0 = acc[mm][4 * i + 2 * half], a1 = acc[mm][4 * i + 2 * half + 1];
          if (Cfg::kGate == GateKind::interleaved) {
            // Columns 2j and 2j+1 of the GEMM are gate and up of output column j.
            store2(d + col / 2, silu(pre(a0, col)) * pre(a1, col + 1), 0.0f, false, aligned);
            continue;
          }
          const bool two = col + 1 < p.n;
          store2(d + col, activate(pre(a0, col)), two ? activate(pre(a1, col + 1)) : 0.0f, two, aligned);
        }
      }
    }
  }

  // The epilogue through shared memory: each consumer writes its rows of kStoreBoxes 64-column
  // boxes at a time, 128-byte swizzled (conflict-free for the accumulator layout), into its
  // staging buffer, and one thread stores them with TMA, which clips the tile at M and N.
  static __device__ __forceinline__ u8* staging_of(u8* staging, int consumer) {
    return staging + consumer * (kStoreBoxes * kBoxBytes);
  }

  // The tile's first 8-column group in box b. A tile of width kOutN % 64 != 0 (chosen to fill the
  // last wave) ends in a box shifted left to end at its last column: the columns it shares with
  // the box before are stored twice, with the same values, and none past the tile is touched.
  static __device__ __forceinline__ int box_group(int b) { return min(8 * b, kOutN / 8 - 8); }

  // C's boxes box0.. of this consumer's rows into its staging buffer (zeros past M and N). The
  // caller has waited for the previous store to finish reading the buffer.
  static __device__ __forceinline__ void load_c(const GemmParams& p, const Unit& u, int consumer, u8* staging,
                                                u64* c_full, int box0) {
    ptx::mbar_arrive_expect_tx(c_full, kStoreBoxes * kBoxBytes);
#pragma unroll
    for (int box = 0; box < kStoreBoxes; ++box)
      ptx::tma_load_3d(staging_of(staging, consumer) + box * kBoxBytes, &p.c_tile, c_full,
                       u.n0 + box_group(box0 + box) * 8, u.m0 + part(consumer) * kWgRows, u.b);
  }

  // One round of the ungated TMA-store epilogue: boxes box0.. of this consumer's rows, from the
  // accumulators into the staging buffer st, with C (already there) read in place. Each warp
  // moves 16 rows x 16 columns, both 8-row halves of two 8-column groups, per stmatrix (and
  // ldmatrix for C): lane 8j + k addresses row k of matrix j, which is row half j % 2 of group
  // i + j / 2.
  // The column bias at this lane's columns of boxes box0.., 2 per 8-column group (0 past N). Loaded
  // before the staging buffer is waited for: in the box loop each load would wait for the stmatrix
  // before it (a memory clobber), its latency exposed once per group.
  static constexpr int kBoxGroups = kStoreTma ? kStoreBoxes * 8 : 1;  // 8-column groups staged at a time
  static __device__ __forceinline__ void load_col_bias(const GemmParams& p, const Unit& u, int box0,
                                                       float (&col_add)[kBoxGroups][2]) {
    const int lane = threadIdx.x % 32;
    const Out* bias = static_cast<const Out*>(p.bias);
#pragma unroll
    for (int g = 0; g < kBoxGroups; ++g)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int col = u.n0 + 8 * (box_group(box0 + g / 8) + g % 8) + 2 * (lane % 4) + e;
        col_add[g][e] = Cfg::kBias == BiasKind::col && col < p.n ? to_float(bias[col]) : 0.0f;
      }
  }

  static __device__ __forceinline__ void epilogue_boxes(const GemmParams& p, float (&acc)[kMmaM][kAcc], const Unit& u,
                                                        u8* st, int row0, int box0,
                                                        const float (&col_add)[kBoxGroups][2]) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x % 128 / 32;
    const Out* bias = static_cast<const Out*>(p.bias);
#pragma unroll
    for (int mm = 0; mm < kMmaM; ++mm) {
      float row_add[2];
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = row0 + mm * 64 + warp * 16 + lane / 4 + half * 8;
        // Rows past M are computed, never stored (TMA clips them).
        row_add[half] = Cfg::kBias == BiasKind::row && row < p.m ? to_float(bias[row]) : 0.0f;
      }
      const int r = mm * 64 + warp * 16 + lane / 8 % 2 * 8 + lane % 8;  // the row this lane addresses
#pragma unroll
      for (int j = 0; j < kStoreBoxes * 8; j += 2) {
        const int i = box_group(box0 + j / 8) + j % 8;  // the tile's 8-column group of this step
        const int g = j % 8 + lane / 16;                // the group this lane addresses, in its box
        u8* row_addr = st + j / 8 * kBoxBytes + r * 128 + (g ^ (r % 8)) * 16;
        u32 c[4] = {0u, 0u, 0u, 0u};
        if (kLoadC) ptx::ldmatrix_x4(row_addr, c);
        u32 d[4];
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const int half = q % 2, group = i + q / 2;
          float v[2];
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float x = p.alpha * acc[mm][4 * group + 2 * half + e];
            if (Cfg::kBias == BiasKind::row) x += row_add[half];
            if (kLoadC) x += p.beta * to_float(u16(e ? c[q] >> 16 : c[q] & 0xffff));
            if (Cfg::kBias == BiasKind::col) x += col_add[j + q / 2][e];
            v[e] = activate(x);
          }
          d[q] = pack2(v[0], v[1]);
        }
        ptx::stmatrix_x4(row_addr, d);
      }
    }
  }

  static __device__ __forceinline__ void epilogue_tma(const GemmParams& p, float (&acc)[kMmaM][kAcc], const Unit& u,
                                                      int consumer, u8* staging, u64* c_full, u32& c_phase) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x % 128 / 32;
    const bool leader = threadIdx.x % 128 == 0;
    u8* st = staging_of(staging, consumer);
    const int row0 = u.m0 + part(consumer) * kWgRows;
    const int out0 = Cfg::kGate == GateKind::none ? u.n0 : u.n0 / 2;  // the tile's first column of D
    const Out* bias = static_cast<const Out*>(p.bias);
#pragma unroll
    for (int box0 = 0; box0 < kOutBoxes; box0 += kStoreBoxes) {
      float col_add[kBoxGroups][2];
      if constexpr (Cfg::kGate == GateKind::none) load_col_bias(p, u, box0, col_add);
      if (kLoadC) {
        // C arrives where D will be written; the wait also says the buffer is free.
        if (leader && !(kPrefetchC && box0 == 0)) {
          ptx::bulk_wait_read();
          load_c(p, u, consumer, staging, c_full, box0);
        }
        ptx::mbar_wait(c_full, c_phase);
        c_phase ^= 1;
      } else {
        // The previous store must be done reading the buffer.
        if (leader) ptx::bulk_wait_read();
        ptx::named_barrier(5 + consumer, 128);
      }
      if constexpr (Cfg::kGate == GateKind::none) {
        epilogue_boxes(p, acc, u, st, row0, box0, col_add);
      } else {
#pragma unroll
        for (int mm = 0; mm < kMmaM; ++mm) {
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const int r = mm * 64 + warp * 16 + lane / 4 + half * 8;  // row within this consumer's part
            const int row = row0 + r;
            const bool row_ok = row < p.m;
            const float row_add = Cfg::kBias == BiasKind::row && row_ok ? to_float(bias[row]) : 0.0f;
            // The staging bytes of D column oc of the tile, on this row.
            auto slot_of = [&](int oc) {
              const int box = oc / 64 - box0, chunk = oc % 64 / 8;
              return st + box * kBoxBytes + r * 128 + ((chunk ^ (r % 8)) * 16) + oc % 8 * 2;
            };
            // The pre-activation value of accumulator a at GEMM column col (no C with a gate).
            auto pre = [&](float a, int col, bool ok) {
              return p.alpha * a + row_add + (Cfg::kBias == BiasKind::col && ok ? to_float(bias[col]) : 0.0f);
            };
            if (Cfg::kGate == GateKind::interleaved) {
              // GEMM columns 2j and 2j+1 are gate and up of D column j: one value per 8-column group.
#pragma unroll
              for (int i = box0 * 16; i < (box0 + kStoreBoxes) * 16; ++i) {
                const int col = u.n0 + 8 * i + 2 * (lane % 4);
                const bool ok = row_ok && col + 1 < p.n;
                const float* a = &acc[mm][4 * i + 2 * half];
                const u32 packed = pack2(silu(pre(a[0], col, ok)) * pre(a[1], col + 1, ok), 0.0f);
                *reinterpret_cast<u16*>(slot_of(4 * i + lane % 4)) = u16(packed & 0xffff);
              }
              continue;
            }
            if (Cfg::kGate == GateKind::split) {
              // Columns c and c + BN/2 of the tile are a gate and its up: the same thread holds both.
#pragma unroll
              for (int i = box0 * 8; i < (box0 + kStoreBoxes) * 8; ++i) {
                const int oc = 8 * i + 2 * (lane % 4), j = out0 + oc;  // gate column j, up column N/2 + j
                const float* g = &acc[mm][4 * i + 2 * half];
                const float* up = &acc[mm][4 * (i + BN / 16) + 2 * half];
                float v[2];
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                  const bool ok = row_ok && j + e < p.out_cols;
                  v[e] = silu(pre(g[e], j + e, ok)) * pre(up[e], p.n / 2 + j + e, ok);
                }
                *reinterpret_cast<u32*>(slot_of(oc)) = pack2(v[0], v[1]);
              }
            }
          }
        }
      }
      ptx::fence_proxy_async_smem();
      ptx::named_barrier(5 + consumer, 128);
      if (leader) {
#pragma unroll
        for (int box = 0; box < kStoreBoxes; ++box)
          ptx::tma_store_3d(&p.d, st + box * kBoxBytes, out0 + box_group(box0 + box) * 8, row0, u.b);
        ptx::bulk_commit();
      }
    }
  }

  // Split-K: every slice leaves its partial tile; the slice that arrives last sums them all and
  // runs the epilogue. Returns false for the slices that are done after leaving their partial.
  static __device__ __forceinline__ bool reduce_split(const GemmParams& p, float (&acc)[kMmaM][kAcc], const Unit& u,
                                                      int consumer, volatile int* last_flags) {
    const int tid = threadIdx.x % 128, split = u.split;
    float* tile_base = p.partials + (long long)u.tile * kSplitK * BM * BN;
    auto slot = [&](int s, int mm, int i4) {
      return reinterpret_cast<float4*>(tile_base + (long long)s * BM * BN) +
             ((part(consumer) * kMmaM + mm) * (kAcc / 4) + i4) * 128 + tid;
    };
#pragma unroll
    for (int mm = 0; mm < kMmaM; ++mm)
#pragma unroll
      for (int i4 = 0; i4 < kAcc / 4; ++i4)
        __stcg(slot(split, mm, i4),
               make_float4(acc[mm][4 * i4], acc[mm][4 * i4 + 1], acc[mm][4 * i4 + 2], acc[mm][4 * i4 + 3]));
    __threadfence();
    tile_barrier(consumer);
    volatile int* last_flag = last_flags + (kPingpong ? consumer : 0);
    if (threadIdx.x % 128 == 0 && (kPingpong || consumer == 0)) {
      const int arrived = atomicAdd(&p.counters[u.tile], 1);
      const bool last = arrived == kSplitK - 1;
      if (last) p.counters[u.tile] = 0;  // ready for the next launch
      *last_flag = last;
    }
    tile_barrier(consumer);
    if (!*last_flag) return false;
    __threadfence();
    for (int s = 0; s < kSplitK; ++s) {
      if (s == split) continue;
#pragma unroll
      for (int mm = 0; mm < kMmaM; ++mm)
#pragma unroll
        for (int i4 = 0; i4 < kAcc / 4; ++i4) {
          const float4 v = __ldcg(slot(s, mm, i4));
          acc[mm][4 * i4] += v.x, acc[mm][4 * i4 + 1] += v.y, acc[mm][4 * i4 + 2] += v.z, acc[mm][4 * i4 + 3] += v.w;
        }
    }
    return true;
  }

  // A stage is free once every CTA that multicasts into it has been told.
  static __device__ __forceinline__ void release(u64* empty) {
    if (kCluster == 1)
      ptx::mbar_arrive(empty);
    else
#pragma unroll
      for (int r = 0; r < kCluster; ++r) ptx::mbar_arrive_cluster(empty, r);
  }

  static __device__ __forceinline__ void consume(const GemmParams& p, const u8* sa, const u8* sb, u64* full, u64* empty,
                                                 int units, volatile int* last_flags, u8* staging, u64* c_full) {
    // Read through a shuffle from lane 0 the compiler knows it is warp-uniform and keeps it, and the
    // descriptors built from it, in uniform registers.
    const int consumer = __shfl_sync(0xffffffffu, int(threadIdx.x / 128) - 1, 0);
    const bool leader = threadIdx.x % 128 == 0;
    u32 c_phase = 0;
    const u64 da = desc_a(sa, consumer), db = desc_b(sb);
    float acc[kMmaM][kAcc];
    const int rank = kCluster > 1 ? int(ptx::cluster_cta_rank()) : 0;
    const int first = blockIdx.x / kCluster, stride = gridDim.x / kCluster;
    const int local_units = first < units ? (units - first + stride - 1) / stride : 0;
    int it = 0, local = 0;
    for (int unit = first; unit < units; unit += stride, ++local) {
      const Unit u = unit_at(p, unit, rank);
      if (kPingpong && local % 2 != consumer) {
        it += u.kb_end - u.kb_begin;  // the other consumer's stages
        continue;
      }
      // Ping-pong: wait for the turn (the other consumer finished the previous unit's main loop).
      if (kPingpong && local > 0) ptx::named_barrier(3 + consumer, 256);
      int prev = -1;
      // C's first boxes load a few k-blocks in, when the last tile's stores have read the staging.
      const int c_kb = min(u.kb_begin + 2, u.kb_end - 1);
      for (int kb = u.kb_begin; kb < u.kb_end; ++kb, ++it) {
        if (kPrefetchC && leader && kb == c_kb) {
          ptx::bulk_wait_read();
          load_c(p, u, consumer, staging, &c_full[consumer], 0);
        }
        const int s = it % kStages;
        ptx::mbar_wait(&full[s], (it / kStages) & 1);
        ptx::wgmma_fence();
        mma_stage(acc, ptx::desc_advance(da, s * kStageA), ptx::desc_advance(db, s * kStageB), kb != u.kb_begin);
        ptx::wgmma_commit();
        // One group stays in flight: the previous stage's reads are done once this returns.
        ptx::wgmma_wait<1>();
        if (prev >= 0 && leader) release(&empty[prev]);
        prev = s;
      }
      ptx::wgmma_wait<0>();
      if (prev >= 0 && leader) release(&empty[prev]);
      if (kPingpong && local + 1 < local_units) ptx::named_barrier_arrive(3 + (1 - consumer), 256);
#pragma unroll
      for (int mm = 0; mm < kMmaM; ++mm) ptx::fence_registers(acc[mm]);
      if (kSplitK > 1 && !reduce_split(p, acc, u, consumer, last_flags)) continue;
      if constexpr (kStoreTma)
        epilogue_tma(p, acc, u, consumer, staging, &c_full[consumer], c_phase);
      else
        epilogue(p, acc, u, consumer);
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
    u8* staging = sb + kStages * kStageB;  // 1024-aligned: whole stages before it
    u64* full = reinterpret_cast<u64*>(staging + kStaging);
    u64* empty = full + kStages;
    u64* c_full = empty + kStages;  // per consumer: its C boxes have landed
    volatile int* last_flags = reinterpret_cast<volatile int*>(c_full + 2);
    if (threadIdx.x == 0) {
      for (int s = 0; s < kStages; ++s) {
        ptx::mbar_init(&full[s], 1);
        ptx::mbar_init(&empty[s], kStageReaders * kCluster);
      }
      for (int c = 0; c < 2; ++c) ptx::mbar_init(&c_full[c], 1);
      ptx::mbar_fence_init();
    }
    // The peer's barriers must be initialised before anything is multicast into them.
    if (kCluster > 1)
      ptx::cluster_sync();
    else
      __syncthreads();
    const int units = p.batch * cluster_tiles_m(p) * cluster_tiles_n(p) * kSplitK;
    if (threadIdx.x < 128) {
      if (kConsumers > 1) ptx::regs_dealloc<40>();
      if (threadIdx.x == 0) produce(p, sa, sb, full, empty, units, kCluster > 1 ? int(ptx::cluster_cta_rank()) : 0);
    } else {
      if (kConsumers > 1) ptx::regs_alloc<232>();
      consume(p, sa, sb, full, empty, units, last_flags, staging, c_full);
    }
    // Neither CTA of a pair may exit while the other can still arrive on its barriers.
    if (kCluster > 1) ptx::cluster_sync();
  }
};

}  // namespace gf

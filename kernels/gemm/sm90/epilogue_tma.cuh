#pragma once
// The epilogue through shared memory: each consumer writes its rows of kStoreBoxes 64-column boxes
// at a time into its staging buffer, 128-byte swizzled (conflict-free for the accumulator layout),
// with a C input (residual) already there by TMA, and one thread stores the boxes with TMA, which
// clips the tile at M and N. It leaves the consumers sooner than storing from registers.
#include "gemm/sm90/scheduler.cuh"
#include "ptx/matrix.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/tma.cuh"

namespace gf {

template <class Cfg>
struct TmaEpilogue : Traits<Cfg> {
  using T = Traits<Cfg>;
  using T::BN, T::kAcc, T::kBoxBytes, T::kLoadC, T::kMmaM, T::kOutBoxes, T::kOutN, T::kPrefetchC, T::kStoreBoxes,
      T::kStoreTma, T::kWgRows, T::activate, T::alpha, T::pack2, T::part, T::swiglu2, T::to_float;
  using Out = typename T::Out;
  using Epi = typename T::Epi;
  using Unit = typename Scheduler<Cfg>::Unit;

  // This consumer's staging buffer.
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

  // The bias, loaded ahead of the main loop: the rows' (Traits::load_row_bias), and the tile's
  // columns, which each warp holds in pairs, pair q = lane + 32j (columns 2q, 2q + 1; 0 past N) in
  // pairs[j], for the epilogue to shuffle each lane the pairs it adds. Loaded after the main loop
  // the column bias cost a trip to DRAM a tile where the weights' stream had evicted it from L2
  // (2 us at 128x14336x4096 fp8 on an H100); in a register of each pair's lane it costs kOutN / 64
  // registers through the main loop.
  static constexpr bool kBiasAhead = kStoreTma && Cfg::kBias == BiasKind::col && Cfg::kGate == GateKind::none;
  struct Ahead {
    u32 pairs[kBiasAhead ? (kOutN / 2 + 31) / 32 : 1];
    float rows[kMmaM][2];
  };
  static __device__ __forceinline__ void load_ahead(const GemmParams& p, const Unit& u, int consumer, Ahead& ahead) {
    T::load_row_bias(p, u, consumer, ahead.rows);
    if constexpr (kBiasAhead) {
      static_assert(sizeof(Epi) == 2, "The TMA-store epilogue's bias is 16-bit.");
      const int lane = threadIdx.x % 32;
      const u16* bias = static_cast<const u16*>(p.bias);
#pragma unroll
      for (int j = 0; j < int(sizeof(ahead.pairs) / 4); ++j) {
        const int col = u.n0 + 2 * (lane + 32 * j);
        const bool in_tile = 2 * (lane + 32 * j) < kOutN;
        const u32 lo = in_tile && col < p.n ? bias[col] : 0u, hi = in_tile && col + 1 < p.n ? bias[col + 1] : 0u;
        ahead.pairs[j] = lo | hi << 16;
      }
    }
  }

  // The column bias at this lane's columns of boxes box0.., 2 per 8-column group: tile group i's
  // pair for this lane is pair 4i + lane % 4, in register i / 8 of lane 4 (i % 8) + lane % 4.
  static constexpr int kBoxGroups = kStoreTma ? kStoreBoxes * 8 : 1;  // 8-column groups staged at a time
  static __device__ __forceinline__ void col_bias(const Ahead& ahead, int box0, float (&col_add)[kBoxGroups][2]) {
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int g = 0; g < kBoxGroups; ++g) {
      const int i = box_group(box0 + g / 8) + g % 8;
      const u32 pair = kBiasAhead ? __shfl_sync(0xffffffffu, ahead.pairs[i / 8], 4 * (i % 8) + lane % 4) : 0u;
      col_add[g][0] = to_float(u16(pair & 0xffff));
      col_add[g][1] = to_float(u16(pair >> 16));
    }
  }

  // One round of the ungated TMA-store epilogue: boxes box0.. of this consumer's rows, from the
  // accumulators into the staging buffer st, with C (already there) read in place. Each warp
  // moves 16 rows x 16 columns, both 8-row halves of two 8-column groups, per stmatrix (and
  // ldmatrix for C): lane 8j + k addresses row k of matrix j, which is row half j % 2 of group
  // i + j / 2.
  static __device__ __forceinline__ void store_boxes(const GemmParams& p, float (&acc)[kMmaM][kAcc], u8* st, int box0,
                                                     const Ahead& ahead, const float (&col_add)[kBoxGroups][2]) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x % 128 / 32;
#pragma unroll
    for (int mm = 0; mm < kMmaM; ++mm) {
      // Rows past M are computed, never stored (TMA clips them).
      const float(&row_add)[2] = ahead.rows[mm];
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
            float x = alpha(p) * acc[mm][4 * group + 2 * half + e];
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

  static __device__ __forceinline__ void store(const GemmParams& p, float (&acc)[kMmaM][kAcc], const Unit& u,
                                               int consumer, u8* staging, u64* c_full, u32& c_phase,
                                               const Ahead& ahead) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x % 128 / 32;
    const bool leader = threadIdx.x % 128 == 0;
    u8* st = staging_of(staging, consumer);
    const int row0 = u.m0 + part(consumer) * kWgRows;
    const int out0 = Cfg::kGate == GateKind::none ? u.n0 : u.n0 / 2;  // the tile's first column of D
    const Epi* bias = static_cast<const Epi*>(p.bias);
#pragma unroll
    for (int box0 = 0; box0 < kOutBoxes; box0 += kStoreBoxes) {
      float col_add[kBoxGroups][2];
      if constexpr (Cfg::kGate == GateKind::none) col_bias(ahead, box0, col_add);
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
        ptx::named_barrier(kBarStaging + consumer, 128);
      }
      if constexpr (Cfg::kGate == GateKind::none) {
        store_boxes(p, acc, st, box0, ahead, col_add);
      } else {
#pragma unroll
        for (int mm = 0; mm < kMmaM; ++mm) {
#pragma unroll
          for (int half = 0; half < 2; ++half) {
            const int r = mm * 64 + warp * 16 + lane / 4 + half * 8;  // row within this consumer's part
            const int row = row0 + r;
            const bool row_ok = row < p.m;
            const float row_add = ahead.rows[mm][half];
            // The staging bytes of D column oc of the tile, on this row.
            auto slot_of = [&](int oc) {
              const int box = oc / 64 - box0, chunk = oc % 64 / 8;
              return st + box * kBoxBytes + r * 128 + ((chunk ^ (r % 8)) * 16) + oc % 8 * 2;
            };
            // The pre-activation value of accumulator a at GEMM column col (no C with a gate).
            auto pre = [&](float a, int col, bool ok) {
              return alpha(p) * a + row_add + (Cfg::kBias == BiasKind::col && ok ? to_float(bias[col]) : 0.0f);
            };
            if (Cfg::kGate == GateKind::interleaved) {
              // GEMM columns 2j and 2j+1 are gate and up of D column j: one value per 8-column
              // group, gated two groups at a time.
#pragma unroll
              for (int i = box0 * 16; i < (box0 + kStoreBoxes) * 16; i += 2) {
                float g[2], up[2], v[2];
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                  const int col = u.n0 + 8 * (i + e) + 2 * (lane % 4);
                  const bool ok = row_ok && col + 1 < p.n;
                  const float* a = &acc[mm][4 * (i + e) + 2 * half];
                  g[e] = pre(a[0], col, ok);
                  up[e] = pre(a[1], col + 1, ok);
                }
                swiglu2(g, up, v);
                const u32 packed = pack2(v[0], v[1]);
                *reinterpret_cast<u16*>(slot_of(4 * i + lane % 4)) = u16(packed & 0xffff);
                *reinterpret_cast<u16*>(slot_of(4 * (i + 1) + lane % 4)) = u16(packed >> 16);
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
                float gate[2], upv[2], v[2];
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                  const bool ok = row_ok && j + e < p.out_cols;
                  gate[e] = pre(g[e], j + e, ok);
                  upv[e] = pre(up[e], p.n / 2 + j + e, ok);
                }
                swiglu2(gate, upv, v);
                *reinterpret_cast<u32*>(slot_of(oc)) = pack2(v[0], v[1]);
              }
            }
          }
        }
      }
      ptx::fence_proxy_async_smem();
      ptx::named_barrier(kBarStaging + consumer, 128);
      if (leader) {
#pragma unroll
        for (int box = 0; box < kStoreBoxes; ++box)
          ptx::tma_store_3d(&p.d, st + box * kBoxBytes, out0 + box_group(box0 + box) * 8, row0, u.b);
        ptx::bulk_commit();
      }
    }
  }
};

}  // namespace gf

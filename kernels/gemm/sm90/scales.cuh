#pragma once
// fp8 dequantisation on the accumulators (GemmArgs has the scale layouts).
//
// Block scales change along K, so they apply per k-block: its wgmma results land in accumulators
// of their own and are added, times A's row scale and B's block scale, to the fp32 accumulators
// (promotion). That also keeps precision: the fp8 wgmma accumulator holds fewer bits than fp32
// (DeepSeek-V3 reports a relative error near 2% at K = 4096 without it). Per-tensor and
// per-row/column scales are constant along K: they multiply the accumulators once after the main
// loop, promoted or not.
#include "gemm/sm90/scheduler.cuh"
#include "ptx/wgmma.cuh"

namespace gf {

template <class Cfg>
struct Scales : Traits<Cfg> {
  using T = Traits<Cfg>;
  using T::BN, T::kAcc, T::kMmaM, T::kScale, T::row_of;
  using Unit = typename Scheduler<Cfg>::Unit;

  // The GEMM column (B row) of tile column c: a split gate's tile holds gate columns n0/2.. and
  // their up columns N/2 + n0/2.. side by side.
  static __device__ __forceinline__ int col_of(const GemmParams& p, const Unit& u, int c) {
    if (Cfg::kGate != GateKind::split) return u.n0 + c;
    return c < BN / 2 ? u.n0 / 2 + c : p.n / 2 + u.n0 / 2 + c - BN / 2;
  }

  // B's block scales a tile spans: one where BN divides 128; a 192-wide tile (n0 a multiple of 64)
  // spans two, the first for its first 128 - n0 % 128 columns.
  static constexpr int kBBlocks = BN > 128 ? 2 : 1;

  // Stage s's scale of the tile's first row for k-block kb: its boxes start at the 16-byte
  // boundary at or below it (params.h).
  static __device__ __forceinline__ const float* stage_scales(const GemmParams& p, const Unit& u, const float* sfa,
                                                              int s, int kb) {
    return sfa + s * int(T::kStageScales / 4) + (Scheduler<Cfg>::first_scale(p, u, kb) & 3);
  }

  // This thread's factors for k-block kb (block scales): A's scale of each row it holds, from the
  // k-block's stage (stage_scales: the tile's BM rows) once it has landed, and B's block scales,
  // from global memory. Multiplied only on promotion, after the k-block's wgmma, so nothing waits
  // for the loads before that.
  struct BlockFactors {
    float a[kMmaM][2], b[kBBlocks];
  };
  static __device__ __forceinline__ void load_b_factors(const GemmParams& p, const Unit& u, int kb,
                                                        float (&b)[kBBlocks]) {
    if constexpr (kScale == ScaleKind::block128) {
      const int k_blocks = (p.k + 127) / 128, n_blocks = (p.n + 127) / 128;
#pragma unroll
      for (int j = 0; j < kBBlocks; ++j)  // past N, any block: those columns are never stored
        b[j] = __ldg(p.scale_b + min(u.n0 / 128 + j, n_blocks - 1) * k_blocks + kb);
    }
  }
  static __device__ __forceinline__ void load_a_factors(const Unit& u, int consumer, const float* stage_scales,
                                                        float (&a)[kMmaM][2]) {
    if constexpr (kScale == ScaleKind::block128)
#pragma unroll
      for (int mm = 0; mm < kMmaM; ++mm)
#pragma unroll
        for (int half = 0; half < 2; ++half)  // rows past M hold zeros or another k-block's: never stored
          a[mm][half] = stage_scales[row_of(u, consumer, mm, half) - u.m0];
  }
  // Factors that load while the k-block before is promoted: A's from k-block kb's stage, B's from
  // b_next (loaded a k-block ahead), whose load for the next k-block starts here.
  static __device__ __forceinline__ void take_factors(const GemmParams& p, const Unit& u, int consumer, int kb,
                                                      const float* stage_scales, BlockFactors& f,
                                                      float (&b_next)[kBBlocks]) {
    load_a_factors(u, consumer, stage_scales, f.a);
#pragma unroll
    for (int j = 0; j < kBBlocks; ++j) f.b[j] = b_next[j];
    load_b_factors(p, u, min(kb + 1, u.kb_end - 1), b_next);
  }
  static __device__ __forceinline__ BlockFactors block_factors(const GemmParams& p, const Unit& u, int consumer, int kb,
                                                               const float* stage_scales) {
    BlockFactors f;
    load_b_factors(p, u, kb, f.b);
    load_a_factors(u, consumer, stage_scales, f.a);
    return f;
  }

  // acc += part * the k-block's factors, over the kCount accumulators of each m64 tile from kFrom
  // on (part holds just those). The tile's 8-column groups below kFirst take B's first block
  // scale, the rest its second; known at compile time, so no element picks at run time.
  template <int kFirst, int kFrom = 0, int kCount = kAcc>
  static __device__ __forceinline__ void promote_groups(float (&acc)[kMmaM][kAcc],
                                                        const float (&part_acc)[kMmaM][kCount], const BlockFactors& f) {
#pragma unroll
    for (int mm = 0; mm < kMmaM; ++mm) {
      float v[2][2] = {{1.0f, 1.0f}, {1.0f, 1.0f}};  // [B block][half]
      if constexpr (kScale == ScaleKind::block128)
#pragma unroll
        for (int j = 0; j < 2; ++j)
#pragma unroll
          for (int half = 0; half < 2; ++half) v[j][half] = f.a[mm][half] * f.b[j < kBBlocks ? j : 0];
#pragma unroll
      for (int j = 0; j < kCount; ++j) {
        const int i = kFrom + j;
        if constexpr (kScale == ScaleKind::block128)
          acc[mm][i] = fmaf(part_acc[mm][j], v[i / 4 < kFirst ? 0 : 1][i % 4 / 2], acc[mm][i]);
        else
          acc[mm][i] += part_acc[mm][j];
      }
    }
  }
  // Called after the wgmma wait that finished part_acc (the accumulators from kFrom on: all of them,
  // or a half of the columns): the fence keeps its reads after that wait.
  template <int kFrom = 0, int kCount = kAcc>
  static __device__ __forceinline__ void promote(float (&acc)[kMmaM][kAcc], float (&part_acc)[kMmaM][kCount],
                                                 const BlockFactors& f, const Unit& u) {
#pragma unroll
    for (int mm = 0; mm < kMmaM; ++mm) ptx::fence_registers(part_acc[mm]);
    if (kBBlocks == 1 || u.n0 % 128 == 0)
      promote_groups<(BN < 128 ? BN : 128) / 8, kFrom, kCount>(acc, part_acc, f);
    else
      promote_groups<8, kFrom, kCount>(acc, part_acc, f);  // n0 % 128 == 64: 64 columns left in the first block
  }
  // The tile's left (kHalf 0) or right half of the columns (promotion by halves).
  template <int kHalf>
  static __device__ __forceinline__ void promote_half(float (&acc)[kMmaM][kAcc], float (&part_acc)[kMmaM][kAcc / 2],
                                                      const BlockFactors& f, const Unit& u) {
    promote<kHalf * kAcc / 2, kAcc / 2>(acc, part_acc, f, u);
  }

  // The factors dequantize multiplies by, read ahead of the main loop (read after it, every tile's
  // epilogue waited on their loads): per tensor one product a thread; per row and column the
  // thread's columns' and rows' where the epilogue computes no transcendental (no SwiGLU gate,
  // no GELU or SiLU), or a thread holds 64 accumulators or fewer (up to 64 + 4 registers beside
  // 128 accumulators: none of 132 rowwise kernels of four GEMMs' default lists spills; with erf
  // GELU a 256x96 tile spilled 16 bytes). At 128 tokens the 64-row ping-pong tiles' scale loads
  // after the main loop sat in the kernel's tail, under the GELU's.
  static constexpr bool kAhead =
      kScale == ScaleKind::tensor || (kScale == ScaleKind::rowcol && (kMmaM * kAcc <= 64 || !T::kTranscendental));
  struct Ahead {
    float tensor;
    float col[kAhead ? BN / 8 : 1][2];
    float row[kAhead ? kMmaM : 1][2];
  };

  static __device__ __forceinline__ void load_ahead(const GemmParams& p, const Unit& u, int consumer, Ahead& f) {
    if constexpr (kAhead && kScale == ScaleKind::tensor) {
      f.tensor = __ldg(p.scale_a) * __ldg(p.scale_b);
    } else if constexpr (kAhead) {
      load_col_scales(p, u, f.col);
#pragma unroll
      for (int mm = 0; mm < kMmaM; ++mm)
#pragma unroll
        for (int half = 0; half < 2; ++half) f.row[mm][half] = row_scale(p, u, consumer, mm, half);
    }
  }

  static __device__ __forceinline__ void load_col_scales(const GemmParams& p, const Unit& u, float (&col)[BN / 8][2]) {
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int g = 0; g < BN / 8; ++g)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int c = col_of(p, u, 8 * g + 2 * (lane % 4) + e);
        col[g][e] = c < p.n ? __ldg(p.scale_b + c) : 0.0f;
      }
  }

  static __device__ __forceinline__ float row_scale(const GemmParams& p, const Unit& u, int consumer, int mm,
                                                    int half) {
    const int row = row_of(u, consumer, mm, half);
    return row < p.m ? __ldg(p.scale_a + row) : 0.0f;
  }

  // The scales constant along K, on the finished accumulators, with alpha (Traits::kAlphaInScales)
  // and zero (0 or -0, a value the caller needs every element to depend on) in their factors.
  static __device__ __forceinline__ void dequantize(const GemmParams& p, float (&acc)[kMmaM][kAcc], const Unit& u,
                                                    int consumer, const Ahead& ahead, float zero) {
    if constexpr (kScale == ScaleKind::tensor) {
      const float s = fmaf(ahead.tensor, p.alpha, zero);
#pragma unroll
      for (int mm = 0; mm < kMmaM; ++mm)
#pragma unroll
        for (int i = 0; i < kAcc; ++i) acc[mm][i] *= s;
    } else if constexpr (kScale == ScaleKind::rowcol) {
      float col_scale[BN / 8][2];
      if constexpr (kAhead) {
#pragma unroll
        for (int g = 0; g < BN / 8; ++g) col_scale[g][0] = ahead.col[g][0], col_scale[g][1] = ahead.col[g][1];
      } else {
        load_col_scales(p, u, col_scale);
      }
#pragma unroll
      for (int mm = 0; mm < kMmaM; ++mm)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          float row;
          if constexpr (kAhead)
            row = ahead.row[mm][half];
          else
            row = row_scale(p, u, consumer, mm, half);
          row = fmaf(row, p.alpha, zero);
#pragma unroll
          for (int g = 0; g < BN / 8; ++g)
#pragma unroll
            for (int e = 0; e < 2; ++e) acc[mm][4 * g + 2 * half + e] *= row * col_scale[g][e];
        }
    }
  }
};

}  // namespace gf

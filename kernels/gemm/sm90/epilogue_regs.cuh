#pragma once
// The epilogue from registers: each consumer thread applies the epilogue to its accumulators and
// stores its elements of D directly, in pairs where they are aligned.
#include "gemm/sm90/scheduler.cuh"

namespace gf {

template <class Cfg>
struct RegisterEpilogue : Traits<Cfg> {
  using T = Traits<Cfg>;
  using T::BN, T::kAcc, T::kMmaM, T::activate, T::pack2, T::row_of, T::swiglu2, T::to_float;
  using Out = typename T::Out;
  using Epi = typename T::Epi;
  using Unit = typename Scheduler<Cfg>::Unit;

  // Read before the main loop: the row bias of the thread's rows (Traits::load_row_bias), and C's
  // elements of its accumulators where they are few (the decode tiles, swap-AB's among them): read
  // after it, the epilogue waited on their loads (native's o + residual at 16 tokens cost 12.5% over
  // its plain GEMM, cute's with C ahead 0.6%; 2026-12-04).
  static constexpr bool kCAhead = Cfg::kHasC && kMmaM * kAcc <= 16;
  struct Ahead {
    Epi c[kCAhead ? kMmaM : 1][kCAhead ? kAcc : 1];
    float rows[kMmaM][2];
  };

  // The element offset in D (and in C, which has D's layout) of the kernel's (row, col): swap-AB's D
  // is the transpose.
  static __device__ __forceinline__ long long offset(const GemmParams& p, const Unit& u, int row, int col) {
    return T::kSwapAB ? ((long long)u.b * p.n + col) * p.m + row : ((long long)u.b * p.m + row) * p.out_cols + col;
  }

  static __device__ __forceinline__ void load_ahead(const GemmParams& p, const Unit& u, int consumer, Ahead& ahead) {
    T::load_row_bias(p, u, consumer, ahead.rows);
    if constexpr (kCAhead) {
      const int lane = threadIdx.x % 32;
      const Epi* c = static_cast<const Epi*>(p.c);
#pragma unroll
      for (int mm = 0; mm < kMmaM; ++mm)
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const int row = row_of(u, consumer, mm, half);
#pragma unroll
          for (int i = 0; i < BN / 8; ++i)
#pragma unroll
            for (int j = 0; j < 2; ++j) {
              const int col = u.n0 + 8 * i + 2 * (lane % 4) + j;
              if (row < p.m && col < p.n) ahead.c[mm][4 * i + 2 * half + j] = c[offset(p, u, row, col)];
            }
        }
    }
  }

  // C's element behind accumulator (mm, k): read ahead, or now from c.
  static __device__ __forceinline__ float c_of(const Ahead& ahead, int mm, int k, const Epi* c) {
    if constexpr (kCAhead)
      return to_float(ahead.c[mm][k]);
    else
      return to_float(*c);
  }

  // Writes v0 at d[0] and, if `two`, v1 at d[1]: one 2-, 4- or 8-byte store when the pair is
  // aligned. An fp8 D takes scale_d * v (GemmArgs::scale_d).
  static __device__ __forceinline__ void store2(Out* d, float v0, float v1, bool two, bool aligned, float scale_d) {
    if constexpr (Cfg::kOut == DType::f32) {
      if (two && aligned)
        *reinterpret_cast<float2*>(d) = make_float2(v0, v1);
      else {
        d[0] = v0;
        if (two) d[1] = v1;
      }
    } else if constexpr (T::kFp8Out) {
      const u16 packed = ptx::pack_fp8x2<Cfg::kOut == DType::e5m2>(scale_d * v0, scale_d * v1);
      if (two && aligned)
        *reinterpret_cast<u16*>(d) = packed;
      else {
        d[0] = u8(packed & 0xff);
        if (two) d[1] = u8(packed >> 8);
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

  // The pre-activation value of accumulator a at GEMM column col: alpha * a, the row's bias
  // (row_add), beta * C (c: its element, where the epilogue has C), the column's bias.
  static __device__ __forceinline__ float pre(const GemmParams& p, float a, float row_add, float c, const Epi* bias,
                                              int col) {
    float v = T::alpha(p) * a + row_add;
    if (Cfg::kHasC) v += p.beta * c;
    if (Cfg::kBias == BiasKind::col) v += to_float(bias[col]);
    return v;
  }

  // Per element (Traits::row_of has the accumulators' layout): v = pre(acc), then the activation
  // or the SwiGLU gate.
  static __device__ __forceinline__ void store(const GemmParams& p, float (&acc)[kMmaM][kAcc], const Unit& u,
                                               int consumer, const Ahead& ahead) {
    if constexpr (T::kSwapAB) {
      store_transposed(p, acc, u, consumer, ahead);
      return;
    }
    const int lane = threadIdx.x % 32;
    const bool aligned = p.pairs_aligned != 0;
    const Epi* bias = static_cast<const Epi*>(p.bias);
    const float scale_d = T::kFp8Out ? __ldg(p.scale_d) : 1.0f;
#pragma unroll
    for (int mm = 0; mm < kMmaM; ++mm) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = row_of(u, consumer, mm, half);
        if (row >= p.m) continue;
        const long long row_off = ((long long)u.b * p.m + row) * p.out_cols;
        Out* d = static_cast<Out*>(p.out) + row_off;
        const Epi* c = static_cast<const Epi*>(p.c) + row_off;
        const float row_add = ahead.rows[mm][half];
        auto at = [&](float a, int col) { return pre(p, a, row_add, Cfg::kHasC ? to_float(c[col]) : 0.0f, bias, col); };
        if (Cfg::kGate == GateKind::split) {
          // Columns c and c + BN/2 of the tile are a gate and its up: the same thread holds both.
#pragma unroll
          for (int i = 0; i < BN / 16; ++i) {
            const int j = u.n0 / 2 + 8 * i + 2 * (lane % 4);
            if (j >= p.out_cols) continue;
            const float* g = &acc[mm][4 * i + 2 * half];
            const float* up = &acc[mm][4 * (i + BN / 16) + 2 * half];
            const int up_col = p.n / 2 + j;
            const float gate[2] = {at(g[0], j), at(g[1], j + 1)}, upv[2] = {at(up[0], up_col), at(up[1], up_col + 1)};
            float v[2];
            swiglu2(gate, upv, v);
            store2(d + j, v[0], v[1], j + 1 < p.out_cols, aligned, scale_d);
          }
          continue;
        }
        if (Cfg::kGate == GateKind::interleaved) {
          // Columns 2j and 2j+1 of the GEMM are gate and up of output column j: one a 8-column
          // group, gated two groups at a time.
#pragma unroll
          for (int i = 0; i < BN / 8; i += 2) {
            float g[2], up[2], v[2];
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int col = u.n0 + 8 * (i + e) + 2 * (lane % 4);
              g[e] = at(acc[mm][4 * (i + e) + 2 * half], col);
              up[e] = at(acc[mm][4 * (i + e) + 2 * half + 1], col + 1);
            }
            swiglu2(g, up, v);
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const int col = u.n0 + 8 * (i + e) + 2 * (lane % 4);
              if (col < p.n) store2(d + col / 2, v[e], 0.0f, false, aligned, scale_d);
            }
          }
          continue;
        }
#pragma unroll
        for (int i = 0; i < BN / 8; ++i) {
          const int col = u.n0 + 8 * i + 2 * (lane % 4);
          if (col >= p.n) continue;
          const float a0 = acc[mm][4 * i + 2 * half], a1 = acc[mm][4 * i + 2 * half + 1];
          const bool two = col + 1 < p.n;
          const int k = 4 * i + 2 * half;  // a0's accumulator
          auto with_c = [&](float a, int col, int k) {
            return pre(p, a, row_add, Cfg::kHasC ? c_of(ahead, mm, k, c + col) : 0.0f, bias, col);
          };
          store2(d + col, activate(with_c(a0, col, k)), two ? activate(with_c(a1, col + 1, k + 1)) : 0.0f, two, aligned,
                 scale_d);
        }
      }
    }
  }

  // Swap-AB: the kernel ran D^T = B A^T, so its element (row, col) is the problem's D at (col,
  // row), and D is p.n rows of p.m (the kernel's M is the problem's N). A thread's two columns
  // lie in two rows of D: one element each. A warp's store covers 8 rows of 8 consecutive
  // elements; D is small (the problem's M is at most 64).
  static __device__ __forceinline__ void store_transposed(const GemmParams& p, float (&acc)[kMmaM][kAcc], const Unit& u,
                                                          int consumer, const Ahead& ahead) {
    const int lane = threadIdx.x % 32;
    const Epi* bias = static_cast<const Epi*>(p.bias);
    const Epi* c = static_cast<const Epi*>(p.c);
    Out* d = static_cast<Out*>(p.out);
    const float scale_d = T::kFp8Out ? __ldg(p.scale_d) : 1.0f;
#pragma unroll
    for (int mm = 0; mm < kMmaM; ++mm) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int row = row_of(u, consumer, mm, half);
        if (row >= p.m) continue;
        const float row_add = ahead.rows[mm][half];
#pragma unroll
        for (int i = 0; i < BN / 8; ++i)
#pragma unroll
          for (int j = 0; j < 2; ++j) {
            const int col = u.n0 + 8 * i + 2 * (lane % 4) + j;
            if (col >= p.n) continue;
            const long long at = offset(p, u, row, col);
            const int k = 4 * i + 2 * half + j;
            const float v = pre(p, acc[mm][k], row_add, Cfg::kHasC ? c_of(ahead, mm, k, c + at) : 0.0f, bias, col);
            store2(d + at, activate(v), 0.0f, false, false, scale_d);
          }
      }
    }
  }
};

}  // namespace gf

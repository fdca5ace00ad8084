#pragma once
// Float to 16-bit conversions and the elementwise math of epilogues, without cuda_bf16.h.
#include "ptx/base.cuh"

namespace gf::ptx {

// Two floats to a packed pair (lo in the low half), round to nearest even.
__device__ __forceinline__ u32 pack_bf16x2(float lo, float hi) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ u32 pack_f16x2(float lo, float hi) {
  u32 r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
// Two floats to a packed fp8 pair (lo in the low byte): round to nearest even, saturated to the
// largest finite value (NaN stays NaN).
template <bool kE5m2>
__device__ __forceinline__ u16 pack_fp8x2(float lo, float hi) {
  u16 r;
  if constexpr (kE5m2)
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  else
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}
// Lane-wise max of two bf16 pairs; a NaN lane gives the other operand's (as fmaxf).
__device__ __forceinline__ u32 max_bf16x2(u32 a, u32 b) {
  u32 r;
  asm("max.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
  return r;
}
__device__ __forceinline__ float bf16_to_float(u16 v) { return __uint_as_float(u32(v) << 16); }
__device__ __forceinline__ float f16_to_float(u16 v) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
  return f;
}

// 2^x in one MUFU op (2 ulp; -inf gives 0, NaN stays NaN). __expf(x) is this of x * log2(e).
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// 1 / x in one MUFU op (1 ulp; inf gives 0, 0 gives inf).
__device__ __forceinline__ float rcp_approx(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace gf::ptx

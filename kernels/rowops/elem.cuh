#pragma once
// Elements of a row to and from fp32, a vector of them at a time: 16-byte loads and stores where
// the vector fills them, bf16 pairs kept packed where the max can take them as they are.
#include "gemmforge/codes.hpp"
#include "ptx/convert.cuh"

namespace gf {

template <DType kType>
struct Elem;
template <>
struct Elem<DType::bf16> {
  using raw = u16;
  static __device__ __forceinline__ float to_float(u16 v) { return ptx::bf16_to_float(v); }
  static __device__ __forceinline__ u16 from_float(float v) { return u16(ptx::pack_bf16x2(v, 0.0f) & 0xffff); }
};
template <>
struct Elem<DType::f16> {
  using raw = u16;
  static __device__ __forceinline__ float to_float(u16 v) { return ptx::f16_to_float(v); }
  static __device__ __forceinline__ u16 from_float(float v) { return u16(ptx::pack_f16x2(v, 0.0f) & 0xffff); }
};
template <>
struct Elem<DType::f32> {
  using raw = float;
  static __device__ __forceinline__ float to_float(float v) { return v; }
  static __device__ __forceinline__ float from_float(float v) { return v; }
};

// kN 32-bit words at p (16-byte aligned, kN a multiple of 4).
template <int kN>
__device__ __forceinline__ void load_words(const void* p, u32 (&w)[kN]) {
#pragma unroll
  for (int i = 0; i < kN / 4; ++i) {
    const uint4 q = static_cast<const uint4*>(p)[i];
    w[4 * i] = q.x, w[4 * i + 1] = q.y, w[4 * i + 2] = q.z, w[4 * i + 3] = q.w;
  }
}

// The two bf16 of a word (the lower address in the low half): each is the top half of its float,
// one shift or mask.
__device__ __forceinline__ void unpack_bf16x2(u32 w, float& lo, float& hi) {
  lo = __uint_as_float(w << 16);
  hi = __uint_as_float(w & 0xffff0000u);
}

// kN consecutive elements at p (aligned to their total size, a power of two up to 64 bytes).
template <DType kType, int kN>
__device__ __forceinline__ void load_vec(const void* p, float (&out)[kN]) {
  using E = Elem<kType>;
  using R = typename E::raw;
  constexpr int kBytes = kN * int(sizeof(R));
  if constexpr (kBytes % 16 == 0) {
    union {
      uint4 q[kBytes / 16];
      R r[kN];
    } u;
#pragma unroll
    for (int i = 0; i < kBytes / 16; ++i) u.q[i] = static_cast<const uint4*>(p)[i];
#pragma unroll
    for (int i = 0; i < kN; ++i) out[i] = E::to_float(u.r[i]);
  } else {
#pragma unroll
    for (int i = 0; i < kN; ++i) out[i] = E::to_float(static_cast<const R*>(p)[i]);
  }
}

template <DType kType, int kN>
__device__ __forceinline__ void store_vec(void* p, const float (&in)[kN]) {
  using E = Elem<kType>;
  using R = typename E::raw;
  constexpr int kBytes = kN * int(sizeof(R));
  if constexpr (kBytes % 16 == 0) {
    union {
      uint4 q[kBytes / 16];
      u32 w[kBytes / 4];
      R r[kN];
    } u;
    if constexpr (kType == DType::f32) {
#pragma unroll
      for (int i = 0; i < kN; ++i) u.r[i] = in[i];
    } else {
      // Two 16-bit values a conversion (the lower address in the low half), not one each and a merge.
#pragma unroll
      for (int i = 0; i < kN / 2; ++i)
        u.w[i] = kType == DType::bf16 ? ptx::pack_bf16x2(in[2 * i], in[2 * i + 1])
                                      : ptx::pack_f16x2(in[2 * i], in[2 * i + 1]);
    }
#pragma unroll
    for (int i = 0; i < kBytes / 16; ++i) static_cast<uint4*>(p)[i] = u.q[i];
  } else {
#pragma unroll
    for (int i = 0; i < kN; ++i) static_cast<R*>(p)[i] = E::from_float(in[i]);
  }
}

}  // namespace gf

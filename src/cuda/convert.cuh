#pragma once
// Element conversions for the nvcc-compiled kernels (the harness, the reference, the epilogue and
// elementwise ops): every element type to and from fp32.
namespace gf {

template <class T>
__device__ __forceinline__ float to_float(T v) {
  return float(v);
}
template <>
__device__ __forceinline__ float to_float(float v) {
  return v;
}
template <class T>
__device__ __forceinline__ T from_float(float v) {
  return T(v);
}
template <>
__device__ __forceinline__ float from_float(float v) {
  return v;
}

}  // namespace gf

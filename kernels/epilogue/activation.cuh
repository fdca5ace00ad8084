#pragma once
// The epilogue's activations and its SwiGLU gate, written once for every user: the NVRTC GEMM
// kernels (kFast: the hardware's tanh and exp approximations), the nvcc-built reference and
// unfused kernels, and host code (the tests' float64 references). T is float or double.
#include "gemmforge/codes.hpp"

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define GF_HOST_DEVICE __host__ __device__ __forceinline__
#else
#include <cmath>
#define GF_HOST_DEVICE inline
#endif
#if defined(__CUDA_ARCH__)
#include "ptx/convert.cuh"
#endif

namespace gf::epi {

GF_HOST_DEVICE float max0_of(float x) { return fmaxf(x, 0.0f); }
GF_HOST_DEVICE double max0_of(double x) { return fmax(x, 0.0); }
GF_HOST_DEVICE float erf_of(float x) { return erff(x); }
GF_HOST_DEVICE double erf_of(double x) { return erf(x); }

template <bool kFast>
GF_HOST_DEVICE float tanh_of(float x) {
#if defined(__CUDA_ARCH__)
  if (kFast) return ptx::tanh_approx(x);
#endif
  return tanhf(x);
}
template <bool kFast>
GF_HOST_DEVICE double tanh_of(double x) {
  return tanh(x);
}

template <bool kFast>
GF_HOST_DEVICE float exp_of(float x) {
#if defined(__CUDA_ARCH__)
  if (kFast) return __expf(x);
#endif
  return expf(x);
}
template <bool kFast>
GF_HOST_DEVICE double exp_of(double x) {
  return exp(x);
}

// Erf GELU, x * Phi(x), for the kernels: Phi from erfc by Abramowitz and Stegun's 7.1.26,
// erfc(z) ~ t (a1 + t (a2 + t (a3 + t (a4 + t a5)))) exp(-z^2) with t = 1 / (1 + p z), z >= 0:
// about 12 instructions and two of the special-function unit (a reciprocal and an exponential)
// where erff takes ~27 and one, and the left tail comes without 1 + erf's cancellation. Relative
// error under 2e-4 wherever |GELU(x)| > 1e-3 (4e-7 absolute), below bf16's and fp16's rounding.
GF_HOST_DEVICE float gelu_erf_fast(float x) {
  const float z = fabsf(x) * 0.70710678f;
#if defined(__CUDA_ARCH__)
  const float t = ptx::rcp_approx(fmaf(0.3275911f, z, 1.0f));
#else
  const float t = 1.0f / fmaf(0.3275911f, z, 1.0f);
#endif
  float q = fmaf(t, 0.5f * 1.061405429f, 0.5f * -1.453152027f);  // the coefficients halved: e = erfc(z) / 2
  q = fmaf(t, q, 0.5f * 1.421413741f);
  q = fmaf(t, q, 0.5f * -0.284496736f);
  q = fmaf(t, q, 0.5f * 0.254829592f);
  const float e = t * q * exp_of<true>(-z * z);
  return x * (x >= 0.0f ? 1.0f - e : e);
}

// act(x). With a compile-time act (the NVRTC kernels' Cfg) the switch folds away.
template <bool kFast = false, class T>
GF_HOST_DEVICE T activate(T x, Activation act) {
  switch (act) {
    case Activation::none:
      return x;
    case Activation::relu:
      return max0_of(x);
    case Activation::gelu:  // x * Phi(x), Phi the standard normal CDF
      if constexpr (kFast && sizeof(T) == 4) return gelu_erf_fast(x);
      return T(0.5) * x * (T(1) + erf_of(x * T(0.70710678118654752)));
    case Activation::gelu_tanh:  // the tanh approximation: tanh(sqrt(2 / pi) * (x + 0.044715 x^3))
      return T(0.5) * x * (T(1) + tanh_of<kFast>(T(0.79788456080286536) * x * (T(1) + T(0.044715) * x * x)));
    case Activation::silu:
      return x / (T(1) + exp_of<kFast>(-x));
  }
  return x;
}

// The SwiGLU gate: silu(gate) * up.
template <bool kFast = false, class T>
GF_HOST_DEVICE T swiglu(T gate, T up) {
  return activate<kFast>(gate, Activation::silu) * up;
}

}  // namespace gf::epi

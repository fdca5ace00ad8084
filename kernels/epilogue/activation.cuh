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

// Erf GELU, x * Phi(x), for the kernels: e = Phi(-|x|) as 2^P(a), a = min(|x|, 7), P a degree-6
// polynomial fitted (least maximum error) to log2 Phi(-a) on [0, 7]. Then x Phi(x) = x - |x| e for
// x >= 0 and -|x| e below, which is max(x, 0) - a e: ten instructions, one of the special-function
// unit (ex2; A&S 7.1.26 took a reciprocal and an exponential, and the SFU, at 4 lanes a
// sub-partition against the FMA pipe's 32, was the cooperative epilogue's bound). Relative error
// under 1.2e-4 wherever |GELU(x)| > 1e-3 (1.1e-7 absolute), below bf16's and fp16's rounding.
// Past 7, Phi(-7) = 1.3e-12: the right tail is x and the left one -7 * 2^P(7), -9e-12. The clamp
// keeps a NaN, so NaN in gives NaN out.
GF_HOST_DEVICE float gelu_erf_fast(float x) {
  constexpr float kTail = 7.0f;
#if defined(__CUDA_ARCH__)
  const float a = ptx::min_nan(fabsf(x), kTail);
#else
  const float a = x != x ? x : fminf(fabsf(x), kTail);  // NaN stays NaN
#endif
  float p = 1.74876513e-05f;
  p = fmaf(p, a, -5.13729174e-04f);
  p = fmaf(p, a, 6.55415654e-03f);
  p = fmaf(p, a, -4.92556281e-02f);
  p = fmaf(p, a, -4.63867128e-01f);
  p = fmaf(p, a, -1.14891398e+00f);
  p = fmaf(p, a, -1.00016296e+00f);
#if defined(__CUDA_ARCH__)
  const float e = ptx::exp2_approx(p);
#else
  const float e = exp2f(p);
#endif
  return fmaf(-a, e, fmaxf(x, 0.0f));
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

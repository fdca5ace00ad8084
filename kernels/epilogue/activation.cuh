#pragma once
// The epilogue's activations and its SwiGLU gate, written once for every user: the NVRTC GEMM
// kernels (kFast: sigmoid forms over the hardware's ex2 and rcp approximations), the nvcc-built
// reference and unfused kernels, and host code (the tests' float64 references). T is float or
// double.
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

GF_HOST_DEVICE float tanh_of(float x) { return tanhf(x); }
GF_HOST_DEVICE double tanh_of(double x) { return tanh(x); }
GF_HOST_DEVICE float exp_of(float x) { return expf(x); }
GF_HOST_DEVICE double exp_of(double x) { return exp(x); }

constexpr double kLog2e = 1.4426950408889634;  // sigmoid(v) = 1 / (1 + 2^(-v log2 e))

// 2^z and 1 / x: on the device the special-function unit's approximations (ex2, rcp).
GF_HOST_DEVICE float exp2f_of(float z) {
#if defined(__CUDA_ARCH__)
  return ptx::exp2_approx(z);
#else
  return exp2f(z);
#endif
}
GF_HOST_DEVICE float one_over(float x) {
#if defined(__CUDA_ARCH__)
  return ptx::rcp_approx(x);
#else
  return 1.0f / x;
#endif
}

// 1 / (1 + 2^z): the sigmoid's shape, sigmoid(v) = 1 / (1 + 2^(-v log2 e)), with the exponent's
// scale folded into z's computation. On the device one ex2 and one rcp of the special-function
// unit; z = +inf gives 0 and z = -inf 1.
GF_HOST_DEVICE float one_over_one_plus_exp2(float z) { return one_over(1.0f + exp2f_of(z)); }

// Erf GELU, x * Phi(x), for the kernels, as x * sigmoid(g(x)) with g(x) = x Q(min(x^2, 36)) and Q
// a degree-5 polynomial fitted (weighted least maximum error) to logit Phi: Phi is a sigmoid of an
// odd function, and an odd polynomial fits it in few terms. Relative error under 9e-5 wherever
// |GELU(x)| > 1e-3 (9e-8 absolute below), under bf16's and fp16's rounding. Past |x| = 6 g grows
// linearly: the right tail is x and the left one -|x| e^-14|x|. Ten instructions of the FMA pipe
// and two of the special-function unit: in a ping-pong kernel each epilogue instruction of the
// FMA pipe costs the other consumer's main loop time (docs/journal, 2026-12-07), so their count is
// what to keep down. NaN in gives NaN out.
GF_HOST_DEVICE float gelu_erf_fast(float x) {
  const float t = fminf(x * x, 36.0f);
  float q = 8.09403318e-08f;  // Q times -log2 e, so that 2^(x Q(t)) = e^-g(x)
  q = fmaf(q, t, -4.75585011e-06f);
  q = fmaf(q, t, 8.95168341e-05f);
  q = fmaf(q, t, 4.48440522e-04f);
  q = fmaf(q, t, -1.05610073e-01f);
  q = fmaf(q, t, -2.30170131e+00f);
  return x * one_over_one_plus_exp2(x * q);
}

// Tanh GELU, 0.5 x (1 + tanh(u)) with u = sqrt(2 / pi) (x + 0.044715 x^3), for the kernels, as
// x * sigmoid(2u) (1 + tanh(u) = 2 sigmoid(2u)): five instructions of the FMA pipe and two of the
// special-function unit (ex2, rcp) against nine and one (tanh.approx), and more accurate than
// tanh.approx (2^-11 relative).
GF_HOST_DEVICE float gelu_tanh_fast(float x) {
  constexpr float kC0 = -2.0 * 0.79788456080286536 * kLog2e;  // -2 sqrt(2 / pi) log2 e
  constexpr float kC1 = kC0 * 0.044715;
  return x * one_over_one_plus_exp2(x * fmaf(kC1, x * x, kC0));
}

// SiLU, x * sigmoid(x), for the kernels: two instructions of the FMA pipe beside ex2 and rcp.
GF_HOST_DEVICE float silu_fast(float x) { return x * one_over_one_plus_exp2(x * float(-kLog2e)); }

// SwiGLU on two elements, out[e] = silu(g[e]) * up[e], with one reciprocal for both: 1 / d0 =
// d1 / (d0 d1), d = 1 + e^-g. A gated epilogue waits on the special-function unit (16 results a
// clock an SM, against 128 of the FMA pipe): two an element before, three a pair here. e^-g is held
// under 2^62 so that d0 d1 stays finite: below g = -43 a gate reads g 2^-62 for g e^g, both under
// 1e-17 |g|. NaN in gives NaN out, in its own element only.
GF_HOST_DEVICE void swiglu2_fast(const float g[2], const float up[2], float out[2]) {
  float d[2];
  for (int e = 0; e < 2; ++e) d[e] = 1.0f + exp2f_of(fminf(g[e] * float(-kLog2e), 62.0f));
  const float r = one_over(d[0] * d[1]);
  out[0] = g[0] * up[0] * (r * d[1]);  // r d1 = 1 / d0 in (2^-62, 1]: neither overflows nor underflows
  out[1] = g[1] * up[1] * (r * d[0]);
}

// act(x): the kernels' fast forms where kFast (T float), else the formulas. With a compile-time
// act (the NVRTC kernels' Cfg) the switch folds away.
template <bool kFast = false, class T>
GF_HOST_DEVICE T activate(T x, Activation act) {
  constexpr bool fast = kFast && sizeof(T) == 4;
  switch (act) {
    case Activation::none:
      return x;
    case Activation::relu:
      return max0_of(x);
    case Activation::gelu:  // x * Phi(x), Phi the standard normal CDF
      if constexpr (fast)
        return gelu_erf_fast(x);
      else
        return T(0.5) * x * (T(1) + erf_of(x * T(0.70710678118654752)));
    case Activation::gelu_tanh:  // the tanh approximation: tanh(sqrt(2 / pi) * (x + 0.044715 x^3))
      if constexpr (fast)
        return gelu_tanh_fast(x);
      else
        return T(0.5) * x * (T(1) + tanh_of(T(0.79788456080286536) * x * (T(1) + T(0.044715) * x * x)));
    case Activation::silu:
      if constexpr (fast)
        return silu_fast(x);
      else
        return x / (T(1) + exp_of(-x));
  }
  return x;
}

// The SwiGLU gate: silu(gate) * up.
template <bool kFast = false, class T>
GF_HOST_DEVICE T swiglu(T gate, T up) {
  return activate<kFast>(gate, Activation::silu) * up;
}

}  // namespace gf::epi

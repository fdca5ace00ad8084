// Elementwise SwiGLU and GELU: 16-byte vectorized where the pointers allow, scalar otherwise.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/check.hpp"
#include "cuda/convert.cuh"
#include "epilogue/activation.cuh"
#include "gemmforge/ops.hpp"

namespace gf::ops {
namespace {

// out = act(a), or act(a) * b when kGated (SwiGLU: silu(gate) * up). V elements per thread step.
template <class T, int V, Activation kAct, bool kGated>
__global__ void elementwise_kernel(const T* a, const T* b, T* out, int64_t count) {
  const int64_t steps = count / V;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < steps; i += int64_t(gridDim.x) * blockDim.x) {
    union Vec {
      uint4 raw;
      T v[V];
    };
    Vec x, y, o;
    if constexpr (V * sizeof(T) == 16) {
      x.raw = reinterpret_cast<const uint4*>(a)[i];
      if (kGated) y.raw = reinterpret_cast<const uint4*>(b)[i];
    } else {
      for (int k = 0; k < V; ++k) x.v[k] = a[i * V + k];
      if (kGated)
        for (int k = 0; k < V; ++k) y.v[k] = b[i * V + k];
    }
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float r = epi::activate(to_float(x.v[k]), kAct);
      o.v[k] = from_float<T>(kGated ? r * to_float(y.v[k]) : r);
    }
    if constexpr (V * sizeof(T) == 16)
      reinterpret_cast<uint4*>(out)[i] = o.raw;
    else
      for (int k = 0; k < V; ++k) out[i * V + k] = o.v[k];
  }
}

template <class T, Activation kAct, bool kGated>
void launch(const void* a, const void* b, void* out, int64_t count, cudaStream_t s) {
  constexpr int kV = 16 / sizeof(T);
  auto aligned = [](const void* p) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool vec = count % kV == 0 && aligned(a) && aligned(b) && aligned(out);
  const int64_t steps = vec ? count / kV : count;
  const unsigned blocks = unsigned(std::min<int64_t>((steps + 255) / 256, 132 * 32));
  auto A = static_cast<const T*>(a), B = static_cast<const T*>(b);
  auto O = static_cast<T*>(out);
  if (vec)
    elementwise_kernel<T, kV, kAct, kGated><<<blocks, 256, 0, s>>>(A, B, O, count);
  else
    elementwise_kernel<T, 1, kAct, kGated><<<blocks, 256, 0, s>>>(A, B, O, count);
  GF_CUDA_CHECK(cudaGetLastError());
}

template <Activation kAct, bool kGated>
void dispatch(const void* a, const void* b, void* out, int64_t count, DType type, cudaStream_t s) {
  GF_CHECK(count >= 0, "elementwise op: count must be >= 0, got {}", count);
  if (count == 0) return;
  GF_CHECK(a && out && (!kGated || b), "elementwise op: null pointer");
  switch (type) {
    case DType::f32:
      return launch<float, kAct, kGated>(a, b, out, count, s);
    case DType::f16:
      return launch<__half, kAct, kGated>(a, b, out, count, s);
    case DType::bf16:
      return launch<__nv_bfloat16, kAct, kGated>(a, b, out, count, s);
    default:
      GF_FAIL("elementwise op: unsupported dtype {} (bf16, f16, f32)", to_string(type));
  }
}

}  // namespace

void swiglu(const void* gate, const void* up, void* out, int64_t count, DType type, cudaStream_t s) {
  dispatch<Activation::silu, true>(gate, up, out, count, type, s);
}

void gelu(const void* x, void* out, int64_t count, DType type, bool tanh_approx, cudaStream_t s) {
  if (tanh_approx)
    dispatch<Activation::gelu_tanh, false>(x, nullptr, out, count, type, s);
  else
    dispatch<Activation::gelu, false>(x, nullptr, out, count, type, s);
}

}  // namespace gf::ops

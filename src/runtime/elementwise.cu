// Elementwise SwiGLU and GELU: 16-byte vectorized where the pointers allow, scalar otherwise.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/check.hpp"
#include "cuda/convert.cuh"
#include "gemmforge/ops.hpp"
#include "epilogue/activation.cuh"

namespace gf::ops {
namespace {

// kOp: 0 swiglu(a = gate, b = up), 1 gelu erf (a), 2 gelu tanh (a). V elements per thread step.
template <class T, int V, int kOp>
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
      if (kOp == 0) y.raw = reinterpret_cast<const uint4*>(b)[i];
    } else {
      for (int k = 0; k < V; ++k) x.v[k] = a[i * V + k];
      if (kOp == 0)
        for (int k = 0; k < V; ++k) y.v[k] = b[i * V + k];
    }
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float xv = to_float(x.v[k]);
      // kOp 0 is silu(x) * y; 1 and 2 are the activation codes 2 and 3 (gelu erf, gelu tanh).
      const float r = kOp == 0 ? activate(xv, 4) * to_float(y.v[k]) : activate(xv, kOp + 1);
      o.v[k] = from_float<T>(r);
    }
    if constexpr (V * sizeof(T) == 16)
      reinterpret_cast<uint4*>(out)[i] = o.raw;
    else
      for (int k = 0; k < V; ++k) out[i * V + k] = o.v[k];
  }
}

template <class T>
void launch(int op, const void* a, const void* b, void* out, int64_t count, cudaStream_t s) {
  constexpr int kV = 16 / sizeof(T);
  auto aligned = [](const void* p) { return p == nullptr || reinterpret_cast<uintptr_t>(p) % 16 == 0; };
  const bool vec = count % kV == 0 && aligned(a) && aligned(b) && aligned(out);
  const int64_t steps = vec ? count / kV : count;
  const unsigned blocks = unsigned(std::min<int64_t>((steps + 255) / 256, 132 * 32));
  auto A = static_cast<const T*>(a), B = static_cast<const T*>(b);
  auto O = static_cast<T*>(out);
  auto go = [&](auto kernel) { kernel<<<blocks, 256, 0, s>>>(A, B, O, count); };
  if (vec) {
    if (op == 0)
      go(elementwise_kernel<T, kV, 0>);
    else if (op == 1)
      go(elementwise_kernel<T, kV, 1>);
    else
      go(elementwise_kernel<T, kV, 2>);
  } else {
    if (op == 0)
      go(elementwise_kernel<T, 1, 0>);
    else if (op == 1)
      go(elementwise_kernel<T, 1, 1>);
    else
      go(elementwise_kernel<T, 1, 2>);
  }
  GF_CUDA_CHECK(cudaGetLastError());
}

void dispatch(int op, const void* a, const void* b, void* out, int64_t count, DType type, cudaStream_t s) {
  GF_CHECK(count >= 0, "elementwise op: count must be >= 0, got {}", count);
  if (count == 0) return;
  GF_CHECK(a && out && (op != 0 || b), "elementwise op: null pointer");
  switch (type) {
    case DType::f32:
      return launch<float>(op, a, b, out, count, s);
    case DType::f16:
      return launch<__half>(op, a, b, out, count, s);
    case DType::bf16:
      return launch<__nv_bfloat16>(op, a, b, out, count, s);
    default:
      GF_FAIL("elementwise op: unsupported dtype {} (bf16, f16, f32)", to_string(type));
  }
}

}  // namespace

void swiglu(const void* gate, const void* up, void* out, int64_t count, DType type, cudaStream_t s) {
  dispatch(0, gate, up, out, count, type, s);
}

void gelu(const void* x, void* out, int64_t count, DType type, bool tanh_approx, cudaStream_t s) {
  dispatch(tanh_approx ? 2 : 1, x, nullptr, out, count, type, s);
}

}  // namespace gf::ops

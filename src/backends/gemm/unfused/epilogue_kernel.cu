#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "backends/gemm/unfused/epilogue_kernel.hpp"
#include "cuda/check.hpp"
#include "cuda/convert.cuh"
#include "epilogue/activation.cuh"

namespace gf::unfused {
namespace {

struct EpiParams {
  int64_t rows, m, n, out_cols;  // rows = batch * m
  float alpha, beta;
  Activation act;
  BiasKind bias;
  bool has_c;
};

// Loads V consecutive elements; V * sizeof(T) is 16 bytes or V is 1.
template <class T, int V>
__device__ __forceinline__ void load_v(const T* p, float (&out)[V]) {
  if constexpr (V == 1) {
    out[0] = to_float(p[0]);
  } else {
    union {
      uint4 raw;
      T v[V];
    } u;
    u.raw = *reinterpret_cast<const uint4*>(p);
#pragma unroll
    for (int k = 0; k < V; ++k) out[k] = to_float(u.v[k]);
  }
}

template <class T, int V>
__device__ __forceinline__ void store_v(T* p, const float (&in)[V]) {
  if constexpr (V == 1) {
    p[0] = from_float<T>(in[0]);
  } else {
    union {
      uint4 raw;
      T v[V];
    } u;
#pragma unroll
    for (int k = 0; k < V; ++k) u.v[k] = from_float<T>(in[k]);
    *reinterpret_cast<uint4*>(p) = u.raw;
  }
}

// One thread per V output elements of one row, grid-stride.
template <class T, int V, GateKind kGate>
__global__ void epilogue_kernel(EpiParams p, const T* g, T* d, const T* c, const T* bias) {
  const int64_t chunks_per_row = p.out_cols / V;
  const int64_t total = p.rows * chunks_per_row;
  for (int64_t idx = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; idx < total;
       idx += int64_t(gridDim.x) * blockDim.x) {
    const int64_t r = idx / chunks_per_row, j0 = idx % chunks_per_row * V;
    const T* grow = g + r * p.n;
    float out[V];
    // pre(x, col): alpha * x + beta * C + bias at GEMM column col (C exists only without a gate).
    auto pre = [&](float x, int64_t col, float cv) {
      float v = p.alpha * x + p.beta * cv;
      if (p.bias == BiasKind::col) v += to_float(bias[col]);
      if (p.bias == BiasKind::row) v += to_float(bias[r % p.m]);
      return v;
    };
    if constexpr (kGate == GateKind::none) {
      float x[V], cv[V] = {};
      load_v<T, V>(grow + j0, x);
      if (p.has_c) load_v<T, V>(c + r * p.n + j0, cv);
#pragma unroll
      for (int k = 0; k < V; ++k) out[k] = epi::activate(pre(x[k], j0 + k, cv[k]), p.act);
    } else {
      float gate[V], up[V];
      if constexpr (kGate == GateKind::interleaved) {
        float both[2 * V];
        if constexpr (V == 1) {
          both[0] = to_float(grow[2 * j0]);
          both[1] = to_float(grow[2 * j0 + 1]);
        } else {
          float lo[V], hi[V];
          load_v<T, V>(grow + 2 * j0, lo);
          load_v<T, V>(grow + 2 * j0 + V, hi);
#pragma unroll
          for (int k = 0; k < V; ++k) both[k] = lo[k], both[V + k] = hi[k];
        }
#pragma unroll
        for (int k = 0; k < V; ++k) gate[k] = both[2 * k], up[k] = both[2 * k + 1];
      } else {
        load_v<T, V>(grow + j0, gate);
        load_v<T, V>(grow + p.out_cols + j0, up);
      }
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const bool pairs = kGate == GateKind::interleaved;
        const int64_t gc = pairs ? 2 * (j0 + k) : j0 + k, uc = pairs ? gc + 1 : j0 + k + p.out_cols;
        out[k] = epi::swiglu(pre(gate[k], gc, 0.0f), pre(up[k], uc, 0.0f));
      }
    }
    store_v<T, V>(d + r * p.out_cols + j0, out);
  }
}

template <class T, int V>
void launch_typed(const EpiParams& ep, GateKind gate, const void* g, const GemmArgs& a, cudaStream_t s) {
  const int64_t total = ep.rows * (ep.out_cols / V);
  const unsigned blocks = unsigned(std::min<int64_t>((total + 255) / 256, 132 * 16));
  auto args = std::make_tuple(ep, static_cast<const T*>(g), static_cast<T*>(a.d), static_cast<const T*>(a.c),
                              static_cast<const T*>(a.bias));
  auto run = [&](auto kernel) { std::apply([&](auto... xs) { kernel<<<blocks, 256, 0, s>>>(xs...); }, args); };
  switch (gate) {
    case GateKind::none:
      return run(epilogue_kernel<T, V, GateKind::none>);
    case GateKind::interleaved:
      return run(epilogue_kernel<T, V, GateKind::interleaved>);
    case GateKind::split:
      return run(epilogue_kernel<T, V, GateKind::split>);
  }
}

bool aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

void apply_epilogue(const GemmProblem& p, const void* g, const GemmArgs& a, cudaStream_t stream) {
  const Epilogue& e = p.epilogue;
  GF_CHECK(g && a.d, "epilogue kernel {}: G and D must be non-null", p.key());
  check_epilogue_args(p, a, "epilogue kernel");
  EpiParams ep{};
  ep.rows = p.batch * p.m, ep.m = p.m, ep.n = p.n, ep.out_cols = p.out_cols();
  ep.alpha = e.alpha, ep.beta = e.beta;
  ep.act = e.act;
  ep.bias = e.bias;
  ep.has_c = e.has_c();
  const GateKind gate = e.gate;
  const int v16 = 16 / dtype_bytes(p.out);  // elements in 16 bytes
  // Whole 16-byte vectors in every row of G, C and D, from 16-byte aligned bases.
  const bool vec =
      p.out_cols() % v16 == 0 && p.n % v16 == 0 && aligned16(g) && aligned16(a.d) && (!e.has_c() || aligned16(a.c));
  switch (p.out) {
    case DType::f32:
      vec ? launch_typed<float, 4>(ep, gate, g, a, stream) : launch_typed<float, 1>(ep, gate, g, a, stream);
      break;
    case DType::f16:
      vec ? launch_typed<__half, 8>(ep, gate, g, a, stream) : launch_typed<__half, 1>(ep, gate, g, a, stream);
      break;
    case DType::bf16:
      vec ? launch_typed<__nv_bfloat16, 8>(ep, gate, g, a, stream)
          : launch_typed<__nv_bfloat16, 1>(ep, gate, g, a, stream);
      break;
    default:
      GF_FAIL("epilogue kernel: unsupported output dtype {}", to_string(p.out));
  }
  GF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gf::unfused

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <fmt/format.h>

#include <cstring>

#include "cuda/check.hpp"
#include "cuda/convert.cuh"
#include "epilogue/activation.cuh"
#include "harness/verify.hpp"

namespace gf::tune {
namespace {

// Calls fn with a null pointer of the C++ type for t.
template <class Fn>
void dispatch(DType t, Fn&& fn) {
  switch (t) {
    case DType::f32:
      return fn(static_cast<float*>(nullptr));
    case DType::f16:
      return fn(static_cast<__half*>(nullptr));
    case DType::bf16:
      return fn(static_cast<__nv_bfloat16*>(nullptr));
    case DType::e4m3:
      return fn(static_cast<__nv_fp8_e4m3*>(nullptr));
    case DType::e5m2:
      return fn(static_cast<__nv_fp8_e5m2*>(nullptr));
  }
}

unsigned grid_for(int64_t count, int threads) {
  return unsigned(std::min<int64_t>((count + threads - 1) / threads, 65536));
}

__device__ __forceinline__ uint64_t mix(uint64_t x) {  // splitmix64
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

template <class T>
__global__ void fill_uniform_kernel(T* p, int64_t n, uint64_t seed, float lo, float hi) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float u = float(mix(seed ^ mix(uint64_t(i))) >> 40) * (1.0f / 16777216.0f);
    p[i] = from_float<T>(lo + (hi - lo) * u);
  }
}

template <class T>
__global__ void fill_nan_kernel(T* p, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = from_float<T>(__int_as_float(0x7fffffff));
}

struct RefParams {
  int64_t m, n, k;
  bool nn;
  float alpha, beta;
  BiasKind bias;
  ScaleKind scale;
};

constexpr int kTile = 64, kTileK = 16;

// One 64 x 64 tile of G per block of 16 x 16 threads, each thread 4 x 4 outputs; batch in z.
template <class TIn, class TOut>
__global__ void reference_gemm_kernel(RefParams p, const TIn* a, const TIn* b, const TOut* c, const TOut* bias,
                                      const float* scale_a, const float* scale_b, float* g) {
  __shared__ float as[kTileK][kTile + 1], bs[kTileK][kTile + 1];
  const int64_t batch = blockIdx.z;
  a += batch * p.m * p.k;
  b += batch * p.n * p.k;
  g += batch * p.m * p.n;
  if (c) c += batch * p.m * p.n;
  const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
  const int64_t m0 = int64_t(blockIdx.y) * kTile, n0 = int64_t(blockIdx.x) * kTile;
  float acc[4][4] = {};
  for (int64_t k0 = 0; k0 < p.k; k0 += kTileK) {
    for (int idx = tid; idx < kTile * kTileK; idx += 256) {
      int r = idx / kTileK, kk = idx % kTileK;  // row-major A: k fastest
      int64_t gm = m0 + r, gk = k0 + kk;
      as[kk][r] = gm < p.m && gk < p.k ? to_float(a[gm * p.k + gk]) : 0.0f;
      int cc = p.nn ? idx % kTile : r, kb = p.nn ? idx / kTile : kk;
      int64_t gn = n0 + cc, gkb = k0 + kb;
      float bv = 0.0f;
      if (gn < p.n && gkb < p.k) bv = to_float(p.nn ? b[gkb * p.n + gn] : b[gn * p.k + gkb]);
      bs[kb][cc] = bv;
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTileK; ++kk)
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) acc[i][j] += as[kk][ty + 16 * i] * bs[kk][tx + 16 * j];
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < 4; ++i) {
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      int64_t gm = m0 + ty + 16 * i, gn = n0 + tx + 16 * j;
      if (gm >= p.m || gn >= p.n) continue;
      float v = acc[i][j];
      if (p.scale == ScaleKind::tensor) v *= scale_a[0] * scale_b[0];
      if (p.scale == ScaleKind::rowcol) v *= scale_a[gm] * scale_b[gn];
      v *= p.alpha;
      if (c && p.beta != 0.0f) v += p.beta * to_float(c[gm * p.n + gn]);
      if (p.bias == BiasKind::col) v += to_float(bias[gn]);
      if (p.bias == BiasKind::row) v += to_float(bias[gm]);
      g[gm * p.n + gn] = v;
    }
  }
}

// rows = batch * M.
__global__ void reference_epilogue_kernel(const float* g, float* out, int64_t rows, int64_t n, Activation act,
                                          GateKind gate) {
  int64_t cols = gate != GateKind::none ? n / 2 : n;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < rows * cols;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = i / cols, j = i % cols;
    const float* row = g + r * n;
    if (gate == GateKind::none) {
      out[i] = epi::activate(row[j], act);
    } else {
      const bool pairs = gate == GateKind::interleaved;
      out[i] = epi::swiglu(pairs ? row[2 * j] : row[j], pairs ? row[2 * j + 1] : row[j + cols]);
    }
  }
}

template <class T>
__global__ void compare_kernel(const T* out, const float* ref, int64_t n, float rel_slack, double* sums,
                               unsigned* max_bits, unsigned long long* nonfinite) {
  double e2 = 0, r2 = 0;
  float mx = 0;
  unsigned long long bad = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float o = to_float(out[i]), r = ref[i];
    if (!isfinite(o)) {
      ++bad;
      continue;
    }
    double d = double(o) - double(r);
    e2 += d * d;
    r2 += double(r) * double(r);
    mx = fmaxf(mx, fabsf(o - r) - rel_slack * fabsf(r));
  }
  for (int off = 16; off > 0; off /= 2) {
    e2 += __shfl_down_sync(0xffffffffu, e2, off);
    r2 += __shfl_down_sync(0xffffffffu, r2, off);
    mx = fmaxf(mx, __shfl_down_sync(0xffffffffu, mx, off));
    bad += __shfl_down_sync(0xffffffffu, bad, off);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&sums[0], e2);
    atomicAdd(&sums[1], r2);
    atomicMax(max_bits, __float_as_uint(mx));  // non-negative floats order like their bits
    atomicAdd(nonfinite, bad);
  }
}

}  // namespace

void fill_uniform(void* ptr, DType t, int64_t count, uint64_t seed, float lo, float hi, cudaStream_t s) {
  dispatch(t, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    fill_uniform_kernel<<<grid_for(count, 256), 256, 0, s>>>(static_cast<T*>(ptr), count, seed, lo, hi);
  });
  GF_CUDA_CHECK(cudaGetLastError());
}

void fill_nan(void* ptr, DType t, int64_t count, cudaStream_t s) {
  dispatch(t, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    fill_nan_kernel<<<grid_for(count, 256), 256, 0, s>>>(static_cast<T*>(ptr), count);
  });
  GF_CUDA_CHECK(cudaGetLastError());
}

void reference_gemm(const GemmProblem& p, const GemmArgs& args, float* g, cudaStream_t s) {
  const Epilogue& e = p.epilogue;
  RefParams rp{};
  rp.m = p.m, rp.n = p.n, rp.k = p.k;
  rp.nn = p.layout == Layout::nn;
  rp.alpha = e.alpha, rp.beta = e.beta;
  rp.bias = e.bias;
  rp.scale = e.scale;
  dim3 grid(unsigned((p.n + kTile - 1) / kTile), unsigned((p.m + kTile - 1) / kTile), unsigned(p.batch));
  GF_CHECK(grid.y <= 65535 && grid.z <= 65535, "reference GEMM grid too large for {}", p.key());
  dispatch(p.a, [&](auto* in_tag) {
    using TIn = std::remove_pointer_t<decltype(in_tag)>;
    dispatch(p.out, [&](auto* out_tag) {
      using TOut = std::remove_pointer_t<decltype(out_tag)>;
      if constexpr (std::is_same_v<TOut, float> || std::is_same_v<TOut, __half> ||
                    std::is_same_v<TOut, __nv_bfloat16>) {
        reference_gemm_kernel<TIn, TOut><<<grid, dim3(16, 16), 0, s>>>(
            rp, static_cast<const TIn*>(args.a), static_cast<const TIn*>(args.b), static_cast<const TOut*>(args.c),
            static_cast<const TOut*>(args.bias), args.scale_a, args.scale_b, g);
      } else {
        GF_FAIL("no reference for output dtype {}", to_string(p.out));
      }
    });
  });
  GF_CUDA_CHECK(cudaGetLastError());
}

void reference_epilogue(const GemmProblem& p, const float* g, float* ref, cudaStream_t s) {
  const int64_t rows = p.batch * p.m;
  reference_epilogue_kernel<<<grid_for(rows * p.out_cols(), 256), 256, 0, s>>>(g, ref, rows, p.n, p.epilogue.act,
                                                                               p.epilogue.gate);
  GF_CUDA_CHECK(cudaGetLastError());
}

Comparison compare(const void* out, DType t, const float* ref, int64_t count, cudaStream_t s) {
  struct Sums {
    double sums[2];
    unsigned max_bits;
    unsigned long long nonfinite;
  };
  Sums* dev = nullptr;
  GF_CUDA_CHECK(cudaMallocAsync(&dev, sizeof(Sums), s));
  GF_CUDA_CHECK(cudaMemsetAsync(dev, 0, sizeof(Sums), s));
  dispatch(t, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    compare_kernel<<<grid_for(count, 256), 256, 0, s>>>(static_cast<const T*>(out), ref, count,
                                                        float(kWorstSlack * tolerance(t)), dev->sums,
                                                        &dev->max_bits, &dev->nonfinite);
  });
  GF_CUDA_CHECK(cudaGetLastError());
  Sums host{};
  GF_CUDA_CHECK(cudaMemcpyAsync(&host, dev, sizeof(Sums), cudaMemcpyDeviceToHost, s));
  GF_CUDA_CHECK(cudaFreeAsync(dev, s));
  GF_CUDA_CHECK(cudaStreamSynchronize(s));
  Comparison c;
  c.err_sq = host.sums[0];
  c.ref_sq = host.sums[1];
  unsigned bits = host.max_bits;
  float mx;
  std::memcpy(&mx, &bits, sizeof mx);
  c.worst_excess = mx;
  c.count = count;
  c.nonfinite = int64_t(host.nonfinite);
  return c;
}

double tolerance(DType out) {
  switch (out) {
    case DType::f32:
      return 1e-3;
    case DType::f16:
      return 5e-3;
    default:
      return 1e-2;
  }
}

std::string verdict(const Comparison& c, DType out) {
  if (c.nonfinite > 0) return fmt::format("{} of {} outputs are NaN or inf", c.nonfinite, c.count);
  double tol = tolerance(out);
  if (!(c.rel_err() <= tol)) return fmt::format("relative error {:.3g} exceeds {:.3g}", c.rel_err(), tol);
  // A few wrong elements can hide in a small Frobenius error; bound the worst one too, beyond the
  // rounding its own magnitude explains (softmax rows of different lengths differ in scale a lot).
  double max_allowed = kWorstSlack * tol * c.ref_rms();
  if (!(c.worst_excess <= max_allowed))
    return fmt::format("worst element error {:.3g} (beyond {} x tol x |ref|) exceeds {:.3g} ({} x tol x rms of the "
                       "reference)",
                       c.worst_excess, kWorstSlack, max_allowed, kWorstSlack);
  return "";
}

}  // namespace gf::tune

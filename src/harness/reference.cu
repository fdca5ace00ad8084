#include "cuda/check.hpp"
#include "cuda/convert.cuh"
#include "epilogue/activation.cuh"
#include "harness/dispatch.cuh"
#include "harness/reference.hpp"

namespace gf::harness {
namespace {

struct RefParams {
  int64_t m, n, k;
  bool nn;
  float alpha, beta;
  BiasKind bias;
  ScaleKind scale;
};

constexpr int kTile = 64, kTileK = 16;

// One 64 x 64 tile of G per block of 16 x 16 threads, each thread 4 x 4 outputs; batch in z.
template <class TA, class TB, class TOut>
__global__ void reference_gemm_kernel(RefParams p, const TA* a, const TB* b, const TOut* c, const TOut* bias,
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
      float av = gm < p.m && gk < p.k ? to_float(a[gm * p.k + gk]) : 0.0f;
      // Block scales dequantize the inputs: A per 1x128 group, B per 128x128 block (layout tn).
      if (p.scale == ScaleKind::block128 && gm < p.m && gk < p.k) av *= scale_a[gk / 128 * p.m + gm];
      as[kk][r] = av;
      int cc = p.nn ? idx % kTile : r, kb = p.nn ? idx / kTile : kk;
      int64_t gn = n0 + cc, gkb = k0 + kb;
      float bv = 0.0f;
      if (gn < p.n && gkb < p.k) bv = to_float(p.nn ? b[gkb * p.n + gn] : b[gn * p.k + gkb]);
      if (p.scale == ScaleKind::block128 && gn < p.n && gkb < p.k)
        bv *= scale_b[gn / 128 * ((p.k + 127) / 128) + gkb / 128];
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

// An fp8 D's reference: the largest |ref| mapped to half the format's range (room for the
// kernels' own rounding), scale_d = that factor, and ref scaled by it.
__global__ void amax_kernel(const float* ref, int64_t n, unsigned* amax_bits) {
  float v = 0.0f;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    v = fmaxf(v, fabsf(ref[i]));
  for (int off = 16; off > 0; off /= 2) v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, off));
  if (threadIdx.x % 32 == 0) atomicMax(amax_bits, __float_as_uint(v));  // non-negative floats order like bits
}

__global__ void apply_scale_kernel(float* ref, int64_t n, const unsigned* amax_bits, float half_range,
                                   float* scale_d) {
  const float amax = __uint_as_float(*amax_bits);
  const float s = amax > 0.0f ? half_range / amax : 1.0f;
  if (blockIdx.x == 0 && threadIdx.x == 0) *scale_d = s;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    ref[i] *= s;
}

}  // namespace

void reference_fp8_output(const GemmProblem& p, float* ref, float* scale_d, cudaStream_t s) {
  GF_CHECK(is_fp8(p.out), "reference_fp8_output: {} does not write fp8", p.key());
  const int64_t n = p.batch * p.m * p.out_cols();
  unsigned* amax_bits = nullptr;
  GF_CUDA_CHECK(cudaMallocAsync(&amax_bits, sizeof *amax_bits, s));
  GF_CUDA_CHECK(cudaMemsetAsync(amax_bits, 0, sizeof *amax_bits, s));
  amax_kernel<<<grid_for(n, 256), 256, 0, s>>>(ref, n, amax_bits);
  const float half_range = p.out == DType::e4m3 ? 224.0f : 28672.0f;
  apply_scale_kernel<<<grid_for(n, 256), 256, 0, s>>>(ref, n, amax_bits, half_range, scale_d);
  GF_CUDA_CHECK(cudaFreeAsync(amax_bits, s));
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
  auto run = [&](auto* a_tag, auto* b_tag) {
    using TA = std::remove_pointer_t<decltype(a_tag)>;
    using TB = std::remove_pointer_t<decltype(b_tag)>;
    dispatch(p.epilogue_dtype(), [&](auto* out_tag) {  // C's and the bias's
      using TOut = std::remove_pointer_t<decltype(out_tag)>;
      if constexpr (std::is_same_v<TOut, float> || std::is_same_v<TOut, __half> ||
                    std::is_same_v<TOut, __nv_bfloat16>) {
        reference_gemm_kernel<TA, TB, TOut><<<grid, dim3(16, 16), 0, s>>>(
            rp, static_cast<const TA*>(args.a), static_cast<const TB*>(args.b), static_cast<const TOut*>(args.c),
            static_cast<const TOut*>(args.bias), args.scale_a, args.scale_b, g);
      } else {
        GF_FAIL("no reference for C and bias of dtype {}", to_string(p.epilogue_dtype()));
      }
    });
  };
  dispatch(p.a, [&](auto* a_tag) {
    using TA = std::remove_pointer_t<decltype(a_tag)>;
    if (p.b == p.a) return run(a_tag, a_tag);
    // Mixed inputs are fp8 only (GemmProblem::invalid_reason).
    if constexpr (std::is_same_v<TA, __nv_fp8_e4m3> || std::is_same_v<TA, __nv_fp8_e5m2>)
      dispatch(p.b, [&](auto* b_tag) {
        using TB = std::remove_pointer_t<decltype(b_tag)>;
        if constexpr (std::is_same_v<TB, __nv_fp8_e4m3> || std::is_same_v<TB, __nv_fp8_e5m2>) run(a_tag, b_tag);
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

}  // namespace gf::harness

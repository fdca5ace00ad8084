// fp8 quantization: q = saturate(x / scale) with scale = amax / (the fp8 type's largest finite
// value), per row or for the whole tensor, so that q * scale gives x back (the scale convention
// of torch._scaled_mm and gemmforge's fp8 GEMMs). amax = 0 gives scale 1.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cuda/check.hpp"
#include "cuda/convert.cuh"
#include "gemmforge/ops.hpp"

namespace gf::ops {
namespace {

constexpr int kThreads = 256;

template <class Q>
__host__ __device__ constexpr float fp8_max() {
  return std::is_same_v<Q, __nv_fp8_e4m3> ? 448.0f : 57344.0f;
}

// The block's max, in every thread. Warp 0 reduces the warps' maxima and hands the result on
// through shared memory: a shuffle would reach warp 0's lanes alone, and the other warps would
// scale their columns by 1 (caught by the rowwise test on the H200). Each call's first barrier
// orders it after the previous call's reads.
__device__ float block_max(float v) {
  __shared__ float warp_max[kThreads / 32];
  __shared__ float result;
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = v;
  __syncthreads();
  if (threadIdx.x < 32) {
    v = threadIdx.x < kThreads / 32 ? warp_max[threadIdx.x] : 0.0f;
    for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    if (threadIdx.x == 0) result = v;
  }
  __syncthreads();
  return result;
}

template <class Q>
__device__ float scale_of(float amax) {
  return amax > 0.0f ? amax / fp8_max<Q>() : 1.0f;
}

// One block per row (grid-stride): the row's amax, then the row quantized (its second read is
// served by L1/L2).
template <class T, class Q>
__global__ void __launch_bounds__(kThreads) rowwise_kernel(const T* x, Q* q, float* scales, int64_t rows, int64_t cols) {
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* row = x + r * cols;
    float amax = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) amax = fmaxf(amax, fabsf(to_float(row[c])));
    const float scale = scale_of<Q>(block_max(amax));
    const float inv = 1.0f / scale;
    for (int64_t c = threadIdx.x; c < cols; c += kThreads) q[r * cols + c] = Q(to_float(row[c]) * inv);
    if (threadIdx.x == 0) scales[r] = scale;
  }
}

// The tensor's amax into *amax (zeroed first), as the bits of a non-negative float, which order
// like unsigned integers.
template <class T>
__global__ void __launch_bounds__(kThreads) amax_kernel(const T* x, int64_t count, unsigned* amax) {
  float v = 0.0f;
  for (int64_t i = blockIdx.x * int64_t(kThreads) + threadIdx.x; i < count; i += int64_t(gridDim.x) * kThreads)
    v = fmaxf(v, fabsf(to_float(x[i])));
  v = block_max(v);
  if (threadIdx.x == 0) atomicMax(amax, __float_as_uint(v));
}

template <class T, class Q>
__global__ void __launch_bounds__(kThreads) tensor_kernel(const T* x, Q* q, int64_t count, const unsigned* amax) {
  const float inv = 1.0f / scale_of<Q>(__uint_as_float(*amax));
  for (int64_t i = blockIdx.x * int64_t(kThreads) + threadIdx.x; i < count; i += int64_t(gridDim.x) * kThreads)
    q[i] = Q(to_float(x[i]) * inv);
}

template <class Q>
__global__ void finish_scale_kernel(float* scale) {  // the amax's bits become the scale
  *scale = scale_of<Q>(__uint_as_float(*reinterpret_cast<unsigned*>(scale)));
}

unsigned grid_for(int64_t work) { return unsigned(std::clamp<int64_t>(work, 1, 132 * 16)); }

template <class T, class Q>
void quantize(const void* x, void* q, float* scale, int64_t rows, int64_t cols, bool rowwise, cudaStream_t s) {
  auto X = static_cast<const T*>(x);
  auto Qp = static_cast<Q*>(q);
  if (rowwise) {
    rowwise_kernel<T, Q><<<grid_for(rows), kThreads, 0, s>>>(X, Qp, scale, rows, cols);
  } else {
    const int64_t count = rows * cols;
    auto amax = reinterpret_cast<unsigned*>(scale);
    GF_CUDA_CHECK(cudaMemsetAsync(amax, 0, sizeof *amax, s));
    const unsigned grid = grid_for((count + kThreads * 8 - 1) / (kThreads * 8));
    amax_kernel<T><<<grid, kThreads, 0, s>>>(X, count, amax);
    tensor_kernel<T, Q><<<grid, kThreads, 0, s>>>(X, Qp, count, amax);
    finish_scale_kernel<Q><<<1, 1, 0, s>>>(scale);
  }
  GF_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void quantize_to(const void* x, void* q, float* scale, int64_t rows, int64_t cols, bool rowwise, DType out,
                 cudaStream_t s) {
  if (out == DType::e4m3) return quantize<T, __nv_fp8_e4m3>(x, q, scale, rows, cols, rowwise, s);
  if (out == DType::e5m2) return quantize<T, __nv_fp8_e5m2>(x, q, scale, rows, cols, rowwise, s);
  GF_FAIL("quantize: the output must be e4m3 or e5m2, not {}", to_string(out));
}

}  // namespace

void quantize_fp8(const void* x, void* q, float* scales, int64_t rows, int64_t cols, bool rowwise, DType in,
                  DType out, cudaStream_t s) {
  GF_CHECK(rows >= 0 && cols >= 0, "quantize: rows and cols must be >= 0, got {} x {}", rows, cols);
  if (rows == 0 || cols == 0) return;
  GF_CHECK(x && q && scales, "quantize: null pointer");
  switch (in) {
    case DType::f32:
      return quantize_to<float>(x, q, scales, rows, cols, rowwise, out, s);
    case DType::f16:
      return quantize_to<__half>(x, q, scales, rows, cols, rowwise, out, s);
    case DType::bf16:
      return quantize_to<__nv_bfloat16>(x, q, scales, rows, cols, rowwise, out, s);
    default:
      GF_FAIL("quantize: the input must be bf16, f16 or f32, not {}", to_string(in));
  }
}

}  // namespace gf::ops

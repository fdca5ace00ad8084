// fp8 quantization: q = saturate(x / scale) with scale = amax / (the fp8 type's largest finite
// value), per group of elements (ops::QuantScaling), so that q * scale gives x back (the scale
// convention of torch._scaled_mm and gemmforge's fp8 GEMMs). amax = 0 gives scale 1.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/arith.hpp"
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
__global__ void __launch_bounds__(kThreads)
    rowwise_kernel(const T* x, Q* q, float* scales, int64_t rows, int64_t cols) {
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

// Four consecutive elements of a row from column c on, zero past its end: one vector load where
// the row's elements come in aligned fours (kVec), else one load each.
template <bool kVec, class T>
__device__ __forceinline__ void load4(const T* row, int64_t c, int64_t cols, float (&v)[4]) {
  if (kVec && c + 4 <= cols) {
    struct alignas(4 * sizeof(T)) Four {
      T e[4];
    };
    const Four f = *reinterpret_cast<const Four*>(row + c);
#pragma unroll
    for (int j = 0; j < 4; ++j) v[j] = to_float(f.e[j]);
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j) v[j] = c + j < cols ? to_float(row[c + j]) : 0.0f;
}

template <bool kVec, class Q>
__device__ __forceinline__ void store4(Q* row, int64_t c, int64_t cols, const float (&v)[4], float inv) {
  if (kVec && c + 4 <= cols) {
    struct alignas(4) Four {
      Q e[4];
    } f;
#pragma unroll
    for (int j = 0; j < 4; ++j) f.e[j] = Q(v[j] * inv);
    *reinterpret_cast<Four*>(row + c) = f;
    return;
  }
#pragma unroll
  for (int j = 0; j < 4; ++j)
    if (c + j < cols) row[c + j] = Q(v[j] * inv);
}

__device__ __forceinline__ float amax4(const float (&v)[4]) {
  return fmaxf(fmaxf(fabsf(v[0]), fabsf(v[1])), fmaxf(fabsf(v[2]), fabsf(v[3])));
}

// 1x128 groups: a warp takes kGroups neighbouring groups at a time (grid-stride), their loads all
// in flight before the first reduction; 4 elements a lane held in registers, so x is read once.
// Scales at (group, row) -> group * rows + row.
template <bool kVec, class T, class Q>
__global__ void __launch_bounds__(kThreads) group_kernel(const T* x, Q* q, float* scales, int64_t rows, int64_t cols) {
  constexpr int kWarps = kThreads / 32, kGroups = 4;
  const int lane = threadIdx.x % 32;
  const int64_t per_row = (cols + 127) / 128, groups = rows * per_row;
  const int64_t stride = int64_t(gridDim.x) * kWarps * kGroups;
  for (int64_t g0 = (blockIdx.x * int64_t(kWarps) + threadIdx.x / 32) * kGroups; g0 < groups; g0 += stride) {
    float v[kGroups][4];
#pragma unroll
    for (int i = 0; i < kGroups; ++i) {
      const int64_t g = min(g0 + i, groups - 1);  // past the end: the last group again, not stored
      load4<kVec>(x + g / per_row * cols, g % per_row * 128 + lane * 4, cols, v[i]);
    }
#pragma unroll
    for (int i = 0; i < kGroups && g0 + i < groups; ++i) {
      const int64_t g = g0 + i, r = g / per_row, group = g % per_row;
      float amax = amax4(v[i]);
      for (int o = 16; o > 0; o /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
      const float scale = scale_of<Q>(amax);
      store4<kVec>(q + r * cols, group * 128 + lane * 4, cols, v[i], 1.0f / scale);
      if (lane == 0) scales[group * rows + r] = scale;
    }
  }
}

// 128x128 blocks: a CTA a block (grid-stride), each thread 4 columns of every 8th row; the
// quantizing pass reads the block again from L1/L2. Scales row-major over the blocks.
template <bool kVec, class T, class Q>
__global__ void __launch_bounds__(kThreads) block_kernel(const T* x, Q* q, float* scales, int64_t rows, int64_t cols) {
  constexpr int kRowStep = kThreads / 32;
  const int64_t per_row = (cols + 127) / 128, blocks = (rows + 127) / 128 * per_row;
  for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    const int64_t r0 = b / per_row * 128, c = b % per_row * 128 + threadIdx.x % 32 * 4;
    const int64_t r_end = min(r0 + 128, rows);
    float amax = 0.0f, v[4];
#pragma unroll 4
    for (int64_t r = r0 + threadIdx.x / 32; r < r_end; r += kRowStep) {
      load4<kVec>(x + r * cols, c, cols, v);
      amax = fmaxf(amax, amax4(v));
    }
    const float scale = scale_of<Q>(block_max(amax));
    for (int64_t r = r0 + threadIdx.x / 32; r < r_end; r += kRowStep) {
      load4<kVec>(x + r * cols, c, cols, v);
      store4<kVec>(q + r * cols, c, cols, v, 1.0f / scale);
    }
    if (threadIdx.x == 0) scales[b] = scale;
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
void quantize(const void* x, void* q, float* scale, int64_t rows, int64_t cols, QuantScaling scaling, cudaStream_t s) {
  auto X = static_cast<const T*>(x);
  auto Qp = static_cast<Q*>(q);
  // Rows of whole, aligned fours: one load and one store a lane.
  const bool vec =
      cols % 4 == 0 && reinterpret_cast<uintptr_t>(x) % (4 * sizeof(T)) == 0 && reinterpret_cast<uintptr_t>(q) % 4 == 0;
  switch (scaling) {
    case QuantScaling::row:
      rowwise_kernel<T, Q><<<grid_for(rows), kThreads, 0, s>>>(X, Qp, scale, rows, cols);
      break;
    case QuantScaling::group1x128: {
      const unsigned grid = grid_for(ceil_div(rows * ceil_div(cols, 128), kThreads / 8));  // 4 groups a warp
      (vec ? group_kernel<true, T, Q> : group_kernel<false, T, Q>)<<<grid, kThreads, 0, s>>>(X, Qp, scale, rows, cols);
      break;
    }
    case QuantScaling::block128x128: {
      const unsigned grid = grid_for(ceil_div(rows, 128) * ceil_div(cols, 128));
      (vec ? block_kernel<true, T, Q> : block_kernel<false, T, Q>)<<<grid, kThreads, 0, s>>>(X, Qp, scale, rows, cols);
      break;
    }
    case QuantScaling::tensor: {
      const int64_t count = rows * cols;
      auto amax = reinterpret_cast<unsigned*>(scale);
      GF_CUDA_CHECK(cudaMemsetAsync(amax, 0, sizeof *amax, s));
      const unsigned grid = grid_for((count + kThreads * 8 - 1) / (kThreads * 8));
      amax_kernel<T><<<grid, kThreads, 0, s>>>(X, count, amax);
      tensor_kernel<T, Q><<<grid, kThreads, 0, s>>>(X, Qp, count, amax);
      finish_scale_kernel<Q><<<1, 1, 0, s>>>(scale);
      break;
    }
  }
  GF_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void quantize_to(const void* x, void* q, float* scale, int64_t rows, int64_t cols, QuantScaling scaling, DType out,
                 cudaStream_t s) {
  if (out == DType::e4m3) return quantize<T, __nv_fp8_e4m3>(x, q, scale, rows, cols, scaling, s);
  if (out == DType::e5m2) return quantize<T, __nv_fp8_e5m2>(x, q, scale, rows, cols, scaling, s);
  GF_FAIL("quantize: the output must be e4m3 or e5m2, not {}", to_string(out));
}

}  // namespace

QuantScaling parse_quant_scaling(std::string_view s) {
  if (s == "tensor") return QuantScaling::tensor;
  if (s == "row") return QuantScaling::row;
  if (s == "1x128") return QuantScaling::group1x128;
  if (s == "128x128") return QuantScaling::block128x128;
  GF_FAIL("quantize: unknown scaling '{}' (tensor, row, 1x128, 128x128)", s);
}

void quantize_fp8(const void* x, void* q, float* scales, int64_t rows, int64_t cols, QuantScaling scaling, DType in,
                  DType out, cudaStream_t s) {
  GF_CHECK(rows >= 0 && cols >= 0, "quantize: rows and cols must be >= 0, got {} x {}", rows, cols);
  if (rows == 0 || cols == 0) return;
  GF_CHECK(x && q && scales, "quantize: null pointer");
  switch (in) {
    case DType::f32:
      return quantize_to<float>(x, q, scales, rows, cols, scaling, out, s);
    case DType::f16:
      return quantize_to<__half>(x, q, scales, rows, cols, scaling, out, s);
    case DType::bf16:
      return quantize_to<__nv_bfloat16>(x, q, scales, rows, cols, scaling, out, s);
    default:
      GF_FAIL("quantize: the input must be bf16, f16 or f32, not {}", to_string(in));
  }
}

}  // namespace gf::ops

// fp8 quantization: q = saturate(x / scale) with scale = amax / (the fp8 type's largest finite
// value), per group of elements (ops::QuantScaling), so that q * scale gives x back (the scale
// convention of torch._scaled_mm and gemmforge's fp8 GEMMs). amax = 0 gives scale 1.
//
// At bandwidth: x moves in 16-byte vectors (8 bf16 / f16, 4 f32), a group's vectors are all
// loaded before its max is taken (they are in flight together) and stay in registers until they
// are cast, so x is read once. A per-tensor scale needs the whole tensor's amax before the first
// element is cast: x is read twice, the second pass backwards so that it starts on what the
// first left in L2; a static scale (given: calibrated, or an earlier step's) is the cast alone,
// and delayed scaling's is that cast taking x's amax on the way (for the next step's scale).
// Rows whose elements are not in aligned vectors take the same kernels with element loads:
// correct, not fast.
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

template <class Q>
__device__ float scale_of(float amax) {
  return amax > 0.0f ? amax / fp8_max<Q>() : 1.0f;
}

// 16 bytes of x: kVecElems<T> elements, loaded as one vector.
template <class T>
constexpr int kVecElems = 16 / int(sizeof(T));
struct alignas(16) Raw {
  uint4 bits;
};

template <class T>
__device__ __forceinline__ float elem(const Raw& r, int j) {
  return to_float(reinterpret_cast<const T*>(&r.bits)[j]);
}

// The vector of row elements from column c on, zeros from `end` on. kVec: the elements come in
// aligned vectors (end a multiple of the vector), so a vector is wholly in or wholly out.
template <bool kVec, class T>
__device__ __forceinline__ Raw load(const T* row, int64_t c, int64_t end) {
  Raw r{make_uint4(0, 0, 0, 0)};
  if constexpr (kVec) {
    if (c < end) r.bits = __ldg(reinterpret_cast<const uint4*>(row + c));
  } else {
    T* e = reinterpret_cast<T*>(&r.bits);
#pragma unroll
    for (int j = 0; j < kVecElems<T>; ++j)
      if (c + j < end) e[j] = row[c + j];
  }
  return r;
}

template <class T>
__device__ __forceinline__ float amax_of(const Raw& r) {
  float m = 0.0f;
#pragma unroll
  for (int j = 0; j < kVecElems<T>; ++j) m = fmaxf(m, fabsf(elem<T>(r, j)));
  return m;
}

// Two elements times inv, rounded to fp8 (saturating) in one instruction; the first in the low byte.
template <class Q>
__device__ __forceinline__ __nv_fp8x2_storage_t cvt2(float a, float b) {
  constexpr __nv_fp8_interpretation_t kind = std::is_same_v<Q, __nv_fp8_e4m3> ? __NV_E4M3 : __NV_E5M2;
  return __nv_cvt_float2_to_fp8x2(make_float2(a, b), __NV_SATFINITE, kind);
}

// The vector's elements from column c on, times inv, as fp8; none from `end` on.
template <bool kVec, class T, class Q>
__device__ __forceinline__ void store(Q* row, int64_t c, int64_t end, const Raw& r, float inv) {
  constexpr int N = kVecElems<T>;
  struct alignas(N) Packed {
    __nv_fp8x2_storage_t pair[N / 2];
  } p;
#pragma unroll
  for (int j = 0; j < N / 2; ++j) p.pair[j] = cvt2<Q>(elem<T>(r, 2 * j) * inv, elem<T>(r, 2 * j + 1) * inv);
  if constexpr (kVec) {
    if (c < end) *reinterpret_cast<Packed*>(row + c) = p;
  } else {
    const auto* bytes = reinterpret_cast<const __nv_fp8_storage_t*>(&p);
#pragma unroll
    for (int j = 0; j < N; ++j)
      if (c + j < end) reinterpret_cast<__nv_fp8_storage_t*>(row)[c + j] = bytes[j];
  }
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

// The max over a team: kTeam neighbouring lanes of a warp, or the whole block.
template <int kTeam>
__device__ __forceinline__ float team_max(float v) {
  if constexpr (kTeam == kThreads) {
    return block_max(v);
  } else {
    static_assert(kTeam <= 32 && (kTeam & (kTeam - 1)) == 0, "a team is a power of two within a warp, or the block");
#pragma unroll
    for (int o = kTeam / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
  }
}

// Segments of len columns of a row (the whole row, or a 1x128 group), a team of kTeam threads
// kParts neighbouring segments of a row (a span), kPer vectors a thread per chunk of kTeam * kPer
// vectors. A span of one chunk is read once and cast from registers; a longer one (rows past 4096
// vectors, one segment a span) is read again, from L2. With kParts > 1 a chunk is the span, and a
// thread's vectors i belong to part i / (kPer / kParts), each part with its own max. Every thread
// runs every iteration (teams past the last span on zeros): the team's shuffles and the block's
// barriers need them all. Scales at (segment, row) -> segment * rows + row.
template <bool kVec, int kTeam, int kPer, int kParts, class T, class Q>
__global__ void __launch_bounds__(kThreads)
    segment_kernel(const T* x, Q* q, float* scales, int64_t rows, int64_t cols, int64_t len) {
  static_assert(kPer % kParts == 0, "a part is whole vectors of a thread");
  constexpr int64_t kTeams = kThreads / kTeam, kChunk = int64_t(kTeam) * kPer * kVecElems<T>;
  constexpr int kPartPer = kPer / kParts;
  const int64_t per_row = ceil_div(cols, len), spans_per_row = ceil_div(per_row, kParts);
  const int64_t spans = rows * spans_per_row;
  const int lane = threadIdx.x % kTeam;
  for (int64_t s0 = blockIdx.x * kTeams; s0 < spans; s0 += gridDim.x * kTeams) {
    const int64_t s = s0 + threadIdx.x / kTeam;
    const bool mine = s < spans;
    const int64_t r = mine ? s / spans_per_row : 0, begin = mine ? s % spans_per_row * kParts * len : 0;
    const int64_t end = mine ? std::min(begin + kParts * len, cols) : 0;
    const T* xr = x + r * cols;
    auto at = [&](int64_t chunk, int i) { return chunk + (int64_t(i) * kTeam + lane) * kVecElems<T>; };
    Raw v[kPer];
    float amax[kParts] = {};
    for (int64_t chunk = begin; chunk < end; chunk += kChunk) {
#pragma unroll
      for (int i = 0; i < kPer; ++i) v[i] = load<kVec>(xr, at(chunk, i), end);
#pragma unroll
      for (int i = 0; i < kPer; ++i) amax[i / kPartPer] = fmaxf(amax[i / kPartPer], amax_of<T>(v[i]));
    }
    float scale[kParts], inv[kParts];
#pragma unroll
    for (int p = 0; p < kParts; ++p) {
      scale[p] = scale_of<Q>(team_max<kTeam>(amax[p]));
      inv[p] = 1.0f / scale[p];
    }
    if (!mine) continue;
    Q* qr = q + r * cols;
    if (end - begin <= kChunk) {
#pragma unroll
      for (int i = 0; i < kPer; ++i) store<kVec, T>(qr, at(begin, i), end, v[i], inv[i / kPartPer]);
    } else {
      for (int64_t chunk = begin; chunk < end; chunk += kChunk)
#pragma unroll
        for (int i = 0; i < kPer; ++i) store<kVec, T>(qr, at(chunk, i), end, load<kVec>(xr, at(chunk, i), end), inv[0]);
    }
    if (lane == 0) {
#pragma unroll
      for (int p = 0; p < kParts; ++p) {
        const int64_t segment = s % spans_per_row * kParts + p;
        if (segment < per_row) scales[segment * rows + r] = scale[p];
      }
    }
  }
}

// 128x128 blocks: a CTA a block (grid-stride), each thread one column vector of every kRowStep-th
// row, all loaded before the block's max and cast from registers. Scales row-major over the blocks.
template <bool kVec, class T, class Q>
__global__ void __launch_bounds__(kThreads) block_kernel(const T* x, Q* q, float* scales, int64_t rows, int64_t cols) {
  constexpr int kRowVecs = 128 / kVecElems<T>, kRowStep = kThreads / kRowVecs, kPer = 128 / kRowStep;
  const int64_t per_row = ceil_div(cols, 128), blocks = ceil_div(rows, 128) * per_row;
  for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
    const int64_t r0 = b / per_row * 128 + threadIdx.x / kRowVecs, c0 = b % per_row * 128;
    const int64_t c = c0 + threadIdx.x % kRowVecs * kVecElems<T>, end = std::min(c0 + 128, cols);
    Raw v[kPer];
    float amax = 0.0f;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int64_t r = r0 + i * kRowStep;
      v[i] = load<kVec>(x + r * cols, c, r < rows ? end : 0);
      amax = fmaxf(amax, amax_of<T>(v[i]));
    }
    const float scale = scale_of<Q>(block_max(amax)), inv = 1.0f / scale;
#pragma unroll
    for (int i = 0; i < kPer; ++i) {
      const int64_t r = r0 + i * kRowStep;
      store<kVec, T>(q + r * cols, c, r < rows ? end : 0, v[i], inv);
    }
    if (threadIdx.x == 0) scales[b] = scale;
  }
}

// Per tensor: x as one row of count elements, in chunks of kTensorPer vectors a thread.
constexpr int kTensorPer = 4;
template <class T>
constexpr int64_t kTensorChunk = int64_t(kThreads) * kTensorPer* kVecElems<T>;

// The tensor's amax into *amax (zeroed first), as the bits of a non-negative float, which order
// like unsigned integers.
template <bool kVec, class T>
__global__ void __launch_bounds__(kThreads) amax_kernel(const T* x, int64_t count, unsigned* amax) {
  float m = 0.0f;
  for (int64_t chunk = blockIdx.x * kTensorChunk<T>; chunk < count; chunk += gridDim.x * kTensorChunk<T>) {
    Raw v[kTensorPer];
#pragma unroll
    for (int i = 0; i < kTensorPer; ++i)
      v[i] = load<kVec>(x, chunk + (i * kThreads + threadIdx.x) * kVecElems<T>, count);
#pragma unroll
    for (int i = 0; i < kTensorPer; ++i) m = fmaxf(m, amax_of<T>(v[i]));
  }
  m = block_max(m);
  if (threadIdx.x == 0) atomicMax(amax, __float_as_uint(m));
}

// The cast by *scale, over the chunks last to first: the amax pass's last chunks are still in L2.
// kAmax: the chunks' amax into *amax too (zeroed first; float bits, as amax_kernel's).
template <bool kVec, bool kAmax, class T, class Q>
__global__ void __launch_bounds__(kThreads)
    tensor_kernel(const T* x, Q* q, int64_t count, const float* scale, unsigned* amax) {
  const float inv = 1.0f / *scale;
  const int64_t chunks = ceil_div(count, kTensorChunk<T>);
  float m = 0.0f;
  for (int64_t k = blockIdx.x; k < chunks; k += gridDim.x) {
    const int64_t chunk = (chunks - 1 - k) * kTensorChunk<T>;
    Raw v[kTensorPer];
#pragma unroll
    for (int i = 0; i < kTensorPer; ++i)
      v[i] = load<kVec>(x, chunk + (i * kThreads + threadIdx.x) * kVecElems<T>, count);
#pragma unroll
    for (int i = 0; i < kTensorPer; ++i) {
      if constexpr (kAmax) m = fmaxf(m, amax_of<T>(v[i]));
      store<kVec, T>(q, chunk + (i * kThreads + threadIdx.x) * kVecElems<T>, count, v[i], inv);
    }
  }
  if constexpr (kAmax) {
    m = block_max(m);
    if (threadIdx.x == 0) atomicMax(amax, __float_as_uint(m));
  }
}

template <class Q>
__global__ void finish_scale_kernel(float* scale) {  // the amax's bits become the scale
  *scale = scale_of<Q>(__uint_as_float(*reinterpret_cast<unsigned*>(scale)));
}

unsigned grid_for(int64_t work) { return unsigned(std::clamp<int64_t>(work, 1, 132 * 16)); }

// One segment kernel's launch: enough CTAs for the spans, kThreads / kTeam of them a CTA.
template <bool kVec, int kTeam, int kPer, int kParts = 1, class T, class Q>
void launch_segment_kernel(const T* x, Q* q, float* scales, int64_t rows, int64_t cols, int64_t len, cudaStream_t s) {
  const int64_t spans = rows * ceil_div(ceil_div(cols, len), kParts);
  segment_kernel<kVec, kTeam, kPer, kParts, T, Q>
      <<<grid_for(ceil_div(spans, kThreads / kTeam)), kThreads, 0, s>>>(x, q, scales, rows, cols, len);
}

// Segments of len columns: the team and the vectors a thread fitted to the segment's vectors, so
// that one chunk covers it (up to 4096 vectors) with at least 4 vectors a thread where it can.
// A team is at least 8 threads, so that each of its loads is a whole 128-byte line: a warp's load
// then touches 4 lines, as the rowwise kernel's do. Segments of 16 vectors (bf16 and f16 1x128
// groups, rows holding more than one) go two to a team for it, each thread keeping 4 vectors.
// Smaller teams read worse on the same bytes in flight: a bf16 1x128 group in teams of 4 (8 lines
// a warp load) read 87-94% of a copy on an H100 where rows of 4096 read 91-99%, and in teams of 2
// (16 lines) 45-52% on an H200 (docs/journal, 2026-12-06).
template <bool kVec, class T, class Q>
void launch_segments(const T* x, Q* q, float* scales, int64_t rows, int64_t cols, int64_t len, cudaStream_t s) {
  const int64_t vectors = ceil_div(len, kVecElems<T>);
  if constexpr (!kVec) {
    launch_segment_kernel<false, 32, 4>(x, q, scales, rows, cols, len, s);
  } else if (vectors == 16 && len == 16 * kVecElems<T> && cols > len) {
    launch_segment_kernel<true, 8, 4, 2>(x, q, scales, rows, cols, len, s);
  } else if (vectors <= 32) {
    launch_segment_kernel<true, 8, 4>(x, q, scales, rows, cols, len, s);
  } else if (vectors <= 64) {
    launch_segment_kernel<true, 16, 4>(x, q, scales, rows, cols, len, s);
  } else if (vectors <= 128) {
    launch_segment_kernel<true, 32, 4>(x, q, scales, rows, cols, len, s);
  } else if (vectors <= 256) {
    launch_segment_kernel<true, 32, 8>(x, q, scales, rows, cols, len, s);
  } else if (vectors <= 512) {
    launch_segment_kernel<true, 32, 16>(x, q, scales, rows, cols, len, s);
  } else if (vectors <= 2048) {
    launch_segment_kernel<true, kThreads, 8>(x, q, scales, rows, cols, len, s);
  } else {
    launch_segment_kernel<true, kThreads, 16>(x, q, scales, rows, cols, len, s);
  }
}

template <bool kVec, class T, class Q>
void quantize(const T* x, Q* q, float* scale, float* amax, int64_t rows, int64_t cols, QuantScaling scaling,
              cudaStream_t s) {
  switch (scaling) {
    case QuantScaling::row:
      return launch_segments<kVec>(x, q, scale, rows, cols, cols, s);
    case QuantScaling::group1x128:
      return launch_segments<kVec>(x, q, scale, rows, cols, 128, s);
    case QuantScaling::block128x128:
      block_kernel<kVec, T, Q>
          <<<grid_for(ceil_div(rows, 128) * ceil_div(cols, 128)), kThreads, 0, s>>>(x, q, scale, rows, cols);
      return;
    case QuantScaling::tensor:
    case QuantScaling::tensor_static: {
      const int64_t count = rows * cols;
      const unsigned grid = grid_for(ceil_div(count, kTensorChunk<T>));
      if (scaling == QuantScaling::tensor) {
        auto bits = reinterpret_cast<unsigned*>(scale);
        GF_CUDA_CHECK(cudaMemsetAsync(bits, 0, sizeof *bits, s));
        amax_kernel<kVec, T><<<grid, kThreads, 0, s>>>(x, count, bits);
        finish_scale_kernel<Q><<<1, 1, 0, s>>>(scale);
      }
      if (amax) {  // delayed scaling: the cast takes x's amax on the way (amax zeroed by quantize_any)
        tensor_kernel<kVec, true, T, Q>
            <<<grid, kThreads, 0, s>>>(x, q, count, scale, reinterpret_cast<unsigned*>(amax));
      } else {
        tensor_kernel<kVec, false, T, Q><<<grid, kThreads, 0, s>>>(x, q, count, scale, nullptr);
      }
      return;
    }
  }
}

template <class T, class Q>
void quantize_as(const void* x, void* q, float* scale, float* amax, int64_t rows, int64_t cols, QuantScaling scaling,
                 cudaStream_t s) {
  auto X = static_cast<const T*>(x);
  auto Qp = static_cast<Q*>(q);
  // Rows of whole vectors, 16-byte aligned, with q's vectors aligned too: one load and one store
  // a vector.
  constexpr int N = kVecElems<T>;
  if (cols % N == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0 && reinterpret_cast<uintptr_t>(q) % N == 0)
    quantize<true>(X, Qp, scale, amax, rows, cols, scaling, s);
  else
    quantize<false>(X, Qp, scale, amax, rows, cols, scaling, s);
  GF_CUDA_CHECK(cudaGetLastError());
}

template <class T>
void quantize_to(const void* x, void* q, float* scale, float* amax, int64_t rows, int64_t cols, QuantScaling scaling,
                 DType out, cudaStream_t s) {
  if (out == DType::e4m3) return quantize_as<T, __nv_fp8_e4m3>(x, q, scale, amax, rows, cols, scaling, s);
  if (out == DType::e5m2) return quantize_as<T, __nv_fp8_e5m2>(x, q, scale, amax, rows, cols, scaling, s);
  GF_FAIL("quantize: the output must be e4m3 or e5m2, not {}", to_string(out));
}

// The checks and the input type's dispatch of both entries; amax: delayed scaling's, or null.
void quantize_any(const void* x, void* q, float* scale, float* amax, int64_t rows, int64_t cols, QuantScaling scaling,
                  DType in, DType out, cudaStream_t s) {
  GF_CHECK(rows >= 0 && cols >= 0, "quantize: rows and cols must be >= 0, got {} x {}", rows, cols);
  // Delayed scaling's amax starts at 0 (the max of no element, and the kernel's atomicMax base).
  if (amax) GF_CUDA_CHECK(cudaMemsetAsync(amax, 0, sizeof *amax, s));
  if (rows == 0 || cols == 0) return;
  GF_CHECK(x && q && scale, "quantize: null pointer");
  switch (in) {
    case DType::f32:
      return quantize_to<float>(x, q, scale, amax, rows, cols, scaling, out, s);
    case DType::f16:
      return quantize_to<__half>(x, q, scale, amax, rows, cols, scaling, out, s);
    case DType::bf16:
      return quantize_to<__nv_bfloat16>(x, q, scale, amax, rows, cols, scaling, out, s);
    default:
      GF_FAIL("quantize: the input must be bf16, f16 or f32, not {}", to_string(in));
  }
}

}  // namespace

QuantScaling parse_quant_scaling(std::string_view s) {
  if (s == "tensor") return QuantScaling::tensor;
  if (s == "row") return QuantScaling::row;
  if (s == "1x128") return QuantScaling::group1x128;
  if (s == "128x128") return QuantScaling::block128x128;
  if (s == "static") return QuantScaling::tensor_static;
  GF_FAIL("quantize: unknown scaling '{}' (tensor, row, 1x128, 128x128, static)", s);
}

void quantize_fp8(const void* x, void* q, float* scales, int64_t rows, int64_t cols, QuantScaling scaling, DType in,
                  DType out, cudaStream_t s) {
  quantize_any(x, q, scales, nullptr, rows, cols, scaling, in, out, s);
}

void quantize_fp8_delayed(const void* x, void* q, const float* scale, float* amax, int64_t rows, int64_t cols, DType in,
                          DType out, cudaStream_t s) {
  GF_CHECK(amax, "quantize: null pointer");
  // The static cast only reads its scale.
  quantize_any(x, q, const_cast<float*>(scale), amax, rows, cols, QuantScaling::tensor_static, in, out, s);
}

}  // namespace gf::ops

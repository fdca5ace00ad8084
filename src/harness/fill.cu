#include "cuda/check.hpp"
#include "cuda/convert.cuh"
#include "harness/dispatch.cuh"
#include "harness/fill.hpp"

namespace gf::harness {
namespace {

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

// Loads every 16 bytes; the store never happens (the buffer holds no such value), but the
// compiler cannot know that, so the loads stay.
__global__ void read_through_kernel(const uint4* p, int64_t n, uint4* never) {
  uint4 acc = make_uint4(0, 0, 0, 0);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const uint4 v = p[i];
    acc.x ^= v.x, acc.y ^= v.y, acc.z ^= v.z, acc.w ^= v.w;
  }
  if (acc.x == 0x9e3779b9u && acc.y == 0x7f4a7c15u && acc.z == 0xf39cc060u && acc.w == 0x5cedc834u) *never = acc;
}

constexpr unsigned char kGuardByte = 0xa5;

__global__ void fill_guard_kernel(unsigned char* p, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    p[i] = kGuardByte;
}

__global__ void guard_damage_kernel(const unsigned char* p, int64_t n, unsigned long long* damaged) {
  unsigned long long bad = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    bad += p[i] != kGuardByte;
  if (bad) atomicAdd(damaged, bad);
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

void read_through(const void* ptr, size_t bytes, cudaStream_t s) {
  const int64_t n = int64_t(bytes / 16);
  // Enough blocks to keep every SM's loads in flight; the tail of a grid-stride loop is short.
  const unsigned blocks = unsigned(std::min<int64_t>((n + 255) / 256, 132 * 16));
  read_through_kernel<<<blocks, 256, 0, s>>>(static_cast<const uint4*>(ptr), n,
                                              const_cast<uint4*>(static_cast<const uint4*>(ptr)));
  GF_CUDA_CHECK(cudaGetLastError());
}

void fill_guard(void* ptr, size_t bytes, cudaStream_t s) {
  fill_guard_kernel<<<grid_for(int64_t(bytes), 256), 256, 0, s>>>(static_cast<unsigned char*>(ptr), int64_t(bytes));
  GF_CUDA_CHECK(cudaGetLastError());
}

int64_t guard_damage(const void* ptr, size_t bytes, cudaStream_t s) {
  unsigned long long* dev = nullptr;
  GF_CUDA_CHECK(cudaMallocAsync(&dev, sizeof *dev, s));
  GF_CUDA_CHECK(cudaMemsetAsync(dev, 0, sizeof *dev, s));
  guard_damage_kernel<<<grid_for(int64_t(bytes), 256), 256, 0, s>>>(static_cast<const unsigned char*>(ptr),
                                                                    int64_t(bytes), dev);
  GF_CUDA_CHECK(cudaGetLastError());
  unsigned long long host = 0;
  GF_CUDA_CHECK(cudaMemcpyAsync(&host, dev, sizeof host, cudaMemcpyDeviceToHost, s));
  GF_CUDA_CHECK(cudaFreeAsync(dev, s));
  GF_CUDA_CHECK(cudaStreamSynchronize(s));
  return int64_t(host);
}

}  // namespace gf::harness

#pragma once
// wgmma: warpgroup matrix multiply-accumulate from shared-memory descriptors.
#include "ptx/base.cuh"
#include "ptx/wgmma_ops.cuh"

namespace gf::ptx {

// Shared-memory matrix descriptor for a 128-byte-swizzled tile.
//   K-major (A, and B of layout TN): rows of 64 16-bit elements (128 B); 8-row groups 1024 B
//     apart (stride byte offset); the leading byte offset is unused.
//   N-major (B of layout NN): rows of 64 N-elements per K index; 8-K-row groups 1024 B apart
//     (stride byte offset); successive 64-element N groups `lbo` bytes apart.
__device__ __forceinline__ u64 smem_desc_sw128(const void* p, u32 lbo = 16) {
  u64 desc = u64((smem_addr(p) & 0x3FFFF) >> 4);
  desc |= u64((lbo & 0x3FFFF) >> 4) << 16;
  desc |= u64(1024 >> 4) << 32;
  desc |= u64(1) << 62;  // 128-byte swizzle
  return desc;
}

// desc moved `bytes` further into shared memory. The start address sits in the low 14 bits in
// 16-byte units and never carries out of them (shared memory ends below 2^18 bytes): one integer
// add, where building each descriptor from its address cost the main loop a dozen instructions
// per wgmma.
__device__ __forceinline__ u64 desc_advance(u64 desc, u32 bytes) {
  return (desc & ~u64(0xffffffff)) | u32(u32(desc) + (bytes >> 4));  // a 32-bit add: no carry to propagate
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
  static_assert(kPending >= 0 && kPending <= 7, "wgmma.wait_group takes 0..7 pending groups.");
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
}

// Keeps the compiler from moving accumulator reads or writes across in-flight wgmma.
template <int N>
__device__ __forceinline__ void fence_registers(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

}  // namespace gf::ptx

#pragma once
// TMA: bulk tensor copies between global and shared memory, completing on an mbarrier.
#include "ptx/base.cuh"

namespace gf::ptx {

__device__ __forceinline__ void tma_prefetch_desc(const TmaDesc* desc) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(desc) : "memory");
}

// A 3-D box (c0 innermost) into shared memory; out-of-bounds elements arrive as zeros.
__device__ __forceinline__ void tma_load_3d(void* dst, const TmaDesc* desc, u64* bar, int c0, int c1, int c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5}], [%2];" ::"r"(smem_addr(dst)),
      "l"(desc), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}

// A 1-D box of the elements from c0 on into shared memory; those past the end arrive as zeros.
__device__ __forceinline__ void tma_load_1d(void* dst, const TmaDesc* desc, u64* bar, int c0) {
  asm volatile(
      "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3}], [%2];" ::"r"(smem_addr(dst)),
      "l"(desc), "r"(smem_addr(bar)), "r"(c0)
      : "memory");
}

// The same box into L2 only, completing on nothing.
__device__ __forceinline__ void tma_prefetch_l2(const TmaDesc* desc, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%0, {%1, %2, %3}];" ::"l"(desc), "r"(c0), "r"(c1),
               "r"(c2)
               : "memory");
}

// The same box, written to the same offset in the shared memory of every CTA in cta_mask.
__device__ __forceinline__ void tma_load_3d_multicast(void* dst, const TmaDesc* desc, u64* bar, int c0, int c1, int c2,
                                                      u16 cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4, %5}], [%2], %6;" ::"r"(smem_addr(dst)),
      "l"(desc), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "h"(cta_mask)
      : "memory");
}

// `bytes` contiguous bytes (a multiple of 16, both addresses 16-byte aligned) into shared memory.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, u32 bytes, u64* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                   smem_addr(dst)),
               "l"(src), "r"(bytes), "r"(smem_addr(bar))
               : "memory");
}

// The same, its lines last to go from L2. For the row ops' streams (each byte read once, each
// row written back) that made DRAM faster: 4-5% at 65536-262144 columns, where evict_first lost
// 4-5% on an H200 (ncu with caches flushed: the same bytes read, in less time). The
// caller hands the lines back (l2_priority_normal) so that they do not outlive the kernel in L2.
__device__ __forceinline__ void bulk_load_evict_last(void* dst, const void* src, u32 bytes, u64* bar) {
  u64 policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;" ::"r"(
          smem_addr(dst)),
      "l"(src), "r"(bytes), "r"(smem_addr(bar)), "l"(policy)
      : "memory");
}

// The 128-byte L2 line at p (128-byte aligned) back to normal eviction priority.
__device__ __forceinline__ void l2_priority_normal(const void* p) {
  asm volatile("applypriority.global.L2::evict_normal [%0], 128;" ::"l"(p) : "memory");
}

// A 3-D box from shared memory to global; bytes past the tensor's bounds are not written.
__device__ __forceinline__ void tma_store_3d(const TmaDesc* desc, const void* src, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(desc),
               "r"(smem_addr(src)), "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}

__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// Until the committed stores have read their shared memory (it may then be overwritten).
__device__ __forceinline__ void bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
// Until the committed stores are complete.
__device__ __forceinline__ void bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }

// Orders this thread's ordinary shared-memory writes before later async-proxy (TMA) reads.
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

}  // namespace gf::ptx

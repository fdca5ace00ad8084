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

// The same box, written to the same offset in the shared memory of every CTA in cta_mask.
__device__ __forceinline__ void tma_load_3d_multicast(void* dst, const TmaDesc* desc, u64* bar, int c0, int c1, int c2,
                                                      u16 cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%3, %4, %5}], [%2], %6;" ::"r"(smem_addr(dst)),
      "l"(desc), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2), "h"(cta_mask)
      : "memory");
}

}  // namespace gf::ptx

#pragma once
// Register reallocation between warpgroups, named barriers, cluster barriers and fences.
#include "ptx/base.cuh"

namespace gf::ptx {

template <u32 kRegs>
__device__ __forceinline__ void regs_dealloc() {
  static_assert(kRegs % 8 == 0 && kRegs >= 24 && kRegs <= 256, "setmaxnreg takes a multiple of 8 in [24, 256].");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegs));
}

template <u32 kRegs>
__device__ __forceinline__ void regs_alloc() {
  static_assert(kRegs % 8 == 0 && kRegs >= 24 && kRegs <= 256, "setmaxnreg takes a multiple of 8 in [24, 256].");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
}

// A barrier among `threads` threads (a multiple of 32) of the CTA, id 1..15 (0 is __syncthreads).
__device__ __forceinline__ void named_barrier(u32 id, u32 threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Signals a named barrier without waiting; the threads that bar.sync on it wait for these. Like
// bar.sync, the .aligned form: every thread of a warp calls it, at the same point.
__device__ __forceinline__ void named_barrier_arrive(u32 id, u32 threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Not .aligned: callers reach it from warps that diverged (the producer's one busy lane).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;" ::: "memory");
}
// The two halves of cluster_sync, for work in between.
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire;" ::: "memory"); }

__device__ __forceinline__ u32 cluster_cta_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

__device__ __forceinline__ void fence_acq_rel_gpu() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }

// The address of the same shared-memory location in CTA `cta` of the cluster.
__device__ __forceinline__ u32 map_shared_cluster(u32 addr, u32 cta) {
  u32 remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(addr), "r"(cta));
  return remote;
}

// Two floats into another CTA's shared memory (a map_shared_cluster address), completing on that
// CTA's mbarrier: a one-way message, no cluster barrier.
__device__ __forceinline__ void st_async_f32x2(u32 remote_dst, float x, float y, u32 remote_bar) {
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];" ::"r"(remote_dst),
               "f"(x), "f"(y), "r"(remote_bar)
               : "memory");
}

// v's bits through an opaque move: a predicate computed from them stays, even where the compiler
// could prove v never NaN (a barrier's predicate that must wait for v to be loaded).
__device__ __forceinline__ u32 opaque_bits(float v) {
  u32 bits;
  asm volatile("mov.b32 %0, %1;" : "=r"(bits) : "f"(v));
  return bits;
}

// Programmatic dependent launch; both are no-ops in a kernel launched without it. The wait
// returns once the stream's previous kernel has finished and its writes are visible: each thread
// runs it before touching what that kernel may write.
__device__ __forceinline__ void grid_dependency_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
// Lets the stream's next kernel start launching; its CTAs take SMs as this grid's leave them.
__device__ __forceinline__ void launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }

}  // namespace gf::ptx

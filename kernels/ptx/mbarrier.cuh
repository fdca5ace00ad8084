#pragma once
// mbarrier: the producer/consumer handshake of the shared-memory pipeline.
#include "ptx/base.cuh"

namespace gf::ptx {

__device__ __forceinline__ void mbar_init(u64* bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}

// Makes barrier initialisation visible to the async proxy (TMA) and the rest of the cluster.
__device__ __forceinline__ void mbar_fence_init() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

// Arrives and announces `bytes` that TMA will deliver before the phase can complete.
__device__ __forceinline__ void mbar_arrive_expect_tx(u64* bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}

__device__ __forceinline__ void mbar_arrive(u64* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}

// +0.0f or -0.0f, read from the barrier (a test of phase 0's parity): placed after an arrival on
// it, a value the compilers cannot see through and cannot read before the arrival. Added to what
// the code after the arrival computes with, it schedules that work below the arrival; ptxas
// otherwise places an arrival nothing depends on below whatever independent work follows it.
__device__ __forceinline__ float mbar_zero_after(u64* bar) {
  float zero;
  asm volatile(
      "{\n.reg .pred p;\nmbarrier.test_wait.parity.shared::cta.b64 p, [%1], 0;\n"
      "selp.f32 %0, 0f00000000, 0f80000000, p;\n}"
      : "=f"(zero)
      : "r"(smem_addr(bar))
      : "memory");
  return zero;
}

// Arrives on the barrier at the same offset in the shared memory of CTA `cta` of the cluster.
// Default (CTA-scope) release semantics: the stage's readers are wgmma, already waited for, so
// nothing needs ordering at cluster scope; a .release.cluster arrive costs a cluster-wide fence
// on every k-block, which made 2-CTA pairs 1.3-2.6x slower than single CTAs.
__device__ __forceinline__ void mbar_arrive_cluster(u64* bar, u32 cta) {
  asm volatile(
      "{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}" ::"r"(smem_addr(bar)),
      "r"(cta)
      : "memory");
}

// The try_wait loop of both waits below, with the wait's semantics (".acquire.cluster" or none,
// the default CTA-scope acquire) spliced in: inline asm takes only a literal. The braces scope the
// label, so the wait can be inlined many times.
#define GF_MBAR_WAIT_LOOP(sem)         \
  "{\n.reg .pred done;\nretry:\n"      \
  "mbarrier.try_wait.parity" sem       \
  ".shared::cta.b64 done, [%0], %1;\n" \
  "@!done bra retry;\n}"

// Waits until the phase with the given parity has completed.
__device__ __forceinline__ void mbar_wait(u64* bar, u32 parity) {
  asm volatile(GF_MBAR_WAIT_LOOP("")::"r"(smem_addr(bar)), "r"(parity) : "memory");
}

// The same wait, acquiring at cluster scope: for phases completed by other CTAs' writes (st.async
// complete_tx releases at cluster scope; a CTA-scope acquire would not pair with it).
__device__ __forceinline__ void mbar_wait_cluster(u64* bar, u32 parity) {
  asm volatile(GF_MBAR_WAIT_LOOP(".acquire.cluster")::"r"(smem_addr(bar)), "r"(parity) : "memory");
}

#undef GF_MBAR_WAIT_LOOP

}  // namespace gf::ptx

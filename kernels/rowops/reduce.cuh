#pragma once
// Combining a row's partial statistics over the threads holding it: lanes (shuffles), a CTA's
// warps (shared memory) and a cluster's CTAs (distributed shared memory, pushed with st.async).
// The norms add plain sums; softmax combines (max, sum of e^(t - max)) pairs, rebased to the max.
#include "ptx/convert.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/sync.cuh"
#include "rowops/row.cuh"

namespace gf {

template <class Cfg>
struct Reduce : Row<Cfg> {
  using R = Row<Cfg>;
  using R::kCluster, R::kGroup, R::kRowsPerCta, R::kWarps;

  // Partial statistics of a row: softmax keeps (max m, sum of e^(t - m)) over t = x * scale, the
  // norms plain sums. NaN and inf propagate through the sums, as in torch.
  // The sum of e^(t - x.m) rebased to e^(t - m); an empty part (sum 0, m -inf) adds nothing.
  static __device__ __forceinline__ float rescale(float2 x, float m) {
    return x.y == 0.0f ? 0.0f : x.y * exp_approx(x.x - m);
  }

  // e^d as one FMUL and one MUFU op. The difference d = t - m is taken first, in natural units:
  // scaling t by log2(e) before subtracting would round it to |t| * 2^-24 and cost large logits
  // their accuracy (relative error 3e-4 at |t| = 1e4), and overflow past 2.4e38.
  static __device__ __forceinline__ float exp_approx(float d) { return ptx::exp2_approx(d * kLog2e); }
  static constexpr float kLog2e = 1.4426950408889634f;
  static constexpr int kScratch = kRowsPerCta * kWarps;  // float2 slots of one CTA reduction

  // v combined over each aligned group of kWidth lanes (a power of two, at most 32) by a
  // butterfly: both lanes of every exchange add the same two values, so every lane of the group
  // ends with the same bits. Softmax takes the max first, then rebases each lane's sum to it: one
  // exponential a lane, where combining (max, sum) pairs step by step took two a step. Those
  // redundant exponentials of the CTA and cluster reductions were as many as the row's own
  // (ncu, 1024x262144: 16% of the warp samples).
  template <int kWidth>
  static __device__ __forceinline__ float2 butterfly(float2 v) {
    static_assert(kWidth >= 1 && kWidth <= 32 && (kWidth & (kWidth - 1)) == 0, "Lane groups are powers of two.");
    const unsigned mask = 0xffffffffu;
    if (Cfg::kOp != RowOpKind::softmax) {
#pragma unroll
      for (int o = kWidth / 2; o > 0; o /= 2)
        v = make_float2(v.x + __shfl_xor_sync(mask, v.x, o), v.y + __shfl_xor_sync(mask, v.y, o));
      return v;
    }
    float m = v.x;
#pragma unroll
    for (int o = kWidth / 2; o > 0; o /= 2) m = fmaxf(m, __shfl_xor_sync(mask, m, o));
    float s = rescale(v, m);
#pragma unroll
    for (int o = kWidth / 2; o > 0; o /= 2) s += __shfl_xor_sync(mask, s, o);
    return make_float2(m, s);
  }

  // Combines v over this CTA's part of the row: the thread's group (shuffles), then the CTA's
  // warps (shared memory slots, which every warp combines with lane l reading slot l % kWarps).
  // Every thread of the group ends with the part's value.
  static __device__ __forceinline__ float2 reduce_cta(float2 v, float2* slots, int group, int lane_in_group) {
    v = butterfly<(kGroup < 32 ? kGroup : 32)>(v);
    if (kWarps > 1) {
      if (lane_in_group % 32 == 0) slots[group * kWarps + lane_in_group / 32] = v;
      __syncthreads();
      v = butterfly<kWarps>(slots[group * kWarps + threadIdx.x % kWarps]);
    }
    return v;
  }

  // ... then over the cluster: thread r sends the part's value into slot `part` of CTA r
  // (st.async, completing on that CTA's mbarrier `bar`), then every CTA combines its kCluster
  // slots (butterfly). One-way messages instead of a cluster barrier, whose release would also
  // wait for this CTA's pending global stores.
  static __device__ __forceinline__ float2 push_cluster(float2 v, float2* slots, u64* bar, u32 parity, int part) {
    if (threadIdx.x < kCluster) {
      const u32 slot = ptx::map_shared_cluster(smem_addr(slots + part), threadIdx.x);
      const u32 remote_bar = ptx::map_shared_cluster(smem_addr(bar), threadIdx.x);
      ptx::st_async_f32x2(slot, v.x, v.y, remote_bar);
    }
    if (threadIdx.x == 0) ptx::mbar_arrive_expect_tx(bar, kCluster * sizeof(float2));
    ptx::mbar_wait_cluster(bar, parity);
    return butterfly<kCluster>(slots[threadIdx.x % kCluster]);
  }
};

}  // namespace gf

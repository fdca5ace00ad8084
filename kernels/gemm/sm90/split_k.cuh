#pragma once
// Split-K in the kernel: each K-slice of a tile leaves its fp32 partial tile (fragment order,
// coalesced); the last slice to arrive (an atomic counter per tile, reset by that slice) sums them
// and runs the epilogue.
#include "gemm/sm90/scheduler.cuh"

namespace gf {

template <class Cfg>
struct SplitK : Traits<Cfg> {
  using T = Traits<Cfg>;
  using T::BM, T::BN, T::kAcc, T::kMmaM, T::kPingpong, T::kSplitK, T::part, T::tile_barrier;
  using Unit = typename Scheduler<Cfg>::Unit;

  // Split-K: every slice leaves its partial tile; the slice that arrives last sums them all and
  // runs the epilogue. Returns false for the slices that are done after leaving their partial.
  static __device__ __forceinline__ bool reduce(const GemmParams& p, float (&acc)[kMmaM][kAcc], const Unit& u,
                                                int consumer, volatile int* last_flags) {
    const int tid = threadIdx.x % 128, split = u.split;
    float* tile_base = p.partials + (long long)u.tile * kSplitK * BM * BN;
    auto slot = [&](int s, int mm, int i4) {
      return reinterpret_cast<float4*>(tile_base + (long long)s * BM * BN) +
             ((part(consumer) * kMmaM + mm) * (kAcc / 4) + i4) * 128 + tid;
    };
#pragma unroll
    for (int mm = 0; mm < kMmaM; ++mm)
#pragma unroll
      for (int i4 = 0; i4 < kAcc / 4; ++i4)
        __stcg(slot(split, mm, i4),
               make_float4(acc[mm][4 * i4], acc[mm][4 * i4 + 1], acc[mm][4 * i4 + 2], acc[mm][4 * i4 + 3]));
    __threadfence();
    tile_barrier(consumer);
    volatile int* last_flag = last_flags + (kPingpong ? consumer : 0);
    if (threadIdx.x % 128 == 0 && (kPingpong || consumer == 0)) {
      const int arrived = atomicAdd(&p.counters[u.tile], 1);
      const bool last = arrived == kSplitK - 1;
      if (last) p.counters[u.tile] = 0;  // ready for the next launch
      *last_flag = last;
    }
    tile_barrier(consumer);
    if (!*last_flag) return false;
    __threadfence();
    for (int s = 0; s < kSplitK; ++s) {
      if (s == split) continue;
#pragma unroll
      for (int mm = 0; mm < kMmaM; ++mm)
#pragma unroll
        for (int i4 = 0; i4 < kAcc / 4; ++i4) {
          const float4 v = __ldcg(slot(s, mm, i4));
          acc[mm][4 * i4] += v.x, acc[mm][4 * i4 + 1] += v.y, acc[mm][4 * i4 + 2] += v.z, acc[mm][4 * i4 + 3] += v.w;
        }
    }
    return true;
  }
};

}  // namespace gf

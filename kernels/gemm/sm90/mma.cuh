#pragma once
// The consumers' tensor-core work on one stage: wgmma over the k-block from 128-byte-swizzled
// shared-memory descriptors, m64 rows of the consumer's part at a time.
#include "gemm/sm90/traits.cuh"
#include "ptx/wgmma.cuh"

namespace gf {

template <class Cfg>
struct Mma : Traits<Cfg> {
  using T = Traits<Cfg>;
  using T::BK, T::BN, T::kMmaM, T::kWgRows, T::part;

  // The wgmma descriptors of this consumer's rows of A and of B in stage 0; stage s and its k and
  // row steps are offsets from them (ptx::desc_advance).
  static __device__ __forceinline__ u64 desc_a(const u8* sa, int consumer) {
    return ptx::smem_desc_sw128(sa + part(consumer) * kWgRows * 128);
  }
  static __device__ __forceinline__ u64 desc_b(const u8* sb) {
    return Cfg::kNN ? ptx::smem_desc_sw128(sb, 64 * 128) : ptx::smem_desc_sw128(sb);
  }

  template <int kCols>
  static __device__ __forceinline__ void mma_stage(float (&acc)[kMmaM][kCols], u64 da, u64 db, bool accumulate) {
#pragma unroll
    for (int mm = 0; mm < kMmaM; ++mm) {
#pragma unroll
      for (int k16 = 0; k16 < BK / 16; ++k16) {
        const u64 a = ptx::desc_advance(da, mm * 64 * 128 + k16 * 32);
        const u64 b = ptx::desc_advance(db, Cfg::kNN ? k16 * 16 * 128 : k16 * 32);
        ptx::Wgmma<BN, Cfg::kIn == DType::f16, Cfg::kNN ? 1 : 0>::mma(acc[mm], a, b, accumulate || k16 > 0);
      }
    }
  }
};

}  // namespace gf

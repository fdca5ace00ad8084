#pragma once
// The consumers' tensor-core work on one stage: wgmma over the k-block from 128-byte-swizzled
// shared-memory descriptors, m64 rows of the consumer's part at a time.
#include "gemm/sm90/traits.cuh"
#include "ptx/wgmma.cuh"

namespace gf {

template <class Cfg>
struct Mma : Traits<Cfg> {
  using T = Traits<Cfg>;
  using T::BN, T::kMmaM, T::kWgRows, T::part;

  // The wgmma descriptors of this consumer's rows of A and of B in stage 0; stage s and its k and
  // row steps are offsets from them (ptx::desc_advance).
  static __device__ __forceinline__ u64 desc_a(const u8* sa, int consumer) {
    return ptx::smem_desc_sw128(sa + part(consumer) * kWgRows * 128);
  }
  static __device__ __forceinline__ u64 desc_b(const u8* sb) {
    return Cfg::kNN ? ptx::smem_desc_sw128(sb, 64 * 128) : ptx::smem_desc_sw128(sb);
  }

  // One wgmma takes 32 bytes of K: k16 of 16-bit operands, k32 of fp8 ones.
  template <int kCols>
  static __device__ __forceinline__ void mma_stage(float (&acc)[kMmaM][kCols], u64 da, u64 db, bool accumulate) {
#pragma unroll
    for (int mm = 0; mm < kMmaM; ++mm) {
#pragma unroll
      for (int step = 0; step < kGemmRowBytes / 32; ++step) {
        const u64 a = ptx::desc_advance(da, mm * 64 * 128 + step * 32);
        const u64 b = ptx::desc_advance(db, Cfg::kNN ? step * 16 * 128 : step * 32);
        if constexpr (T::kFp8)
          ptx::WgmmaF8<BN, Cfg::kIn == DType::e5m2, Cfg::kInB == DType::e5m2>::mma(acc[mm], a, b,
                                                                                   accumulate || step > 0);
        else
          ptx::Wgmma<BN, Cfg::kIn == DType::f16, Cfg::kNN ? 1 : 0>::mma(acc[mm], a, b, accumulate || step > 0);
      }
    }
  }

  // The k-block's wgmma over the tile's left (kHalf 0) or right half of the columns, into a set of
  // half the width: B's rows from kHalf * BN / 2 on (fp8 reads B K-major: 128 bytes a row).
  template <int kHalf>
  static __device__ __forceinline__ void mma_half(float (&acc)[kMmaM][T::kAcc / 2], u64 da, u64 db) {
    static_assert(T::kFp8 && !Cfg::kNN, "Promotion by halves is for fp8, whose B is K-major.");
#pragma unroll
    for (int mm = 0; mm < kMmaM; ++mm)
#pragma unroll
      for (int step = 0; step < kGemmRowBytes / 32; ++step)
        ptx::WgmmaF8<BN / 2, Cfg::kIn == DType::e5m2, Cfg::kInB == DType::e5m2>::mma(
            acc[mm], ptx::desc_advance(da, mm * 64 * 128 + step * 32),
            ptx::desc_advance(db, kHalf * BN / 2 * 128 + step * 32), step > 0);
  }
};

}  // namespace gf

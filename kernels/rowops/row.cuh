#pragma once
// A row op's shape, derived once from the instantiation's Cfg (see codegen), and the row I/O every
// op and data path shares: where a CTA's part of a row lies, softmax's valid length, the
// residual added first, the norms' affine parameters.
//
// A group of kGroup threads holds its part of a row, kIters vectors of kVec elements a thread.
// Short rows share a CTA (kRowsPerCta groups); long rows are split over a cluster of kCluster
// CTAs, kPartCols columns each.
#include "gemmforge/codes.hpp"
#include "rowops/elem.cuh"
#include "rowops/params.h"

namespace gf {

template <class Cfg>
struct Row {
  static constexpr int kCols = Cfg::kCols, kVec = Cfg::kVec, kThreads = Cfg::kThreads;
  static constexpr int kRowsPerCta = Cfg::kRowsPerCta, kCluster = Cfg::kCluster;
  static constexpr int kGroup = kThreads / kRowsPerCta;            // threads per row (in this CTA)
  static constexpr int kPartCols = kCols / kCluster;               // columns per CTA of the cluster
  static constexpr int kPartVecs = (kPartCols + kVec - 1) / kVec;  // vectors per CTA part
  static constexpr int kIters = (kPartVecs + kGroup - 1) / kGroup;
  static constexpr int kWarps = kGroup >= 32 ? kGroup / 32 : 1;  // warps per row group
  static_assert(kThreads % kRowsPerCta == 0 && (kGroup & (kGroup - 1)) == 0, "Row groups are powers of two.");
  static_assert(kCols % kCluster == 0, "A cluster splits the row evenly.");
  static_assert(kCols % kVec == 0, "Rows hold whole vectors (the host picks kVec to divide the row).");
  static_assert(kCluster == 1 || kPartCols % kVec == 0, "Cluster parts hold whole vectors.");
  static_assert(kCluster == 1 || kRowsPerCta == 1, "A cluster works on one row at a time.");
  static_assert(kCluster == 1 || kWarps > 1,
                "Reusing a cluster's slots relies on the __syncthreads of reduce_cta (two warps or more).");
  static_assert(Cfg::kStream || kIters * kVec <= 128, "More than 128 values per thread would spill.");
  using In = Elem<Cfg::kIn>;
  using Out = Elem<Cfg::kOut>;

  // bf16 softmax may keep a resident row's words as loaded for a max of two lanes at a time.
  static constexpr bool kPackedMax = Cfg::kPairMax;
  static_assert(!kPackedMax ||
                    (Cfg::kOp == RowOpKind::softmax && Cfg::kIn == DType::bf16 && kVec % 8 == 0 && !Cfg::kStream),
                "The max over bf16 pairs is for bf16 softmax rows in registers, 16-byte vectors.");
  using Words = u32[kIters][kPackedMax ? kVec / 2 : 1];

  static __device__ __forceinline__ float inf() { return __int_as_float(0x7f800000); }
  static __device__ __forceinline__ float nan() { return __int_as_float(0x7fffffff); }

  // The first element of CTA `part`'s part of a row.
  static __device__ __forceinline__ long long part_base(long long row, int part) {
    return row * kCols + (long long)part * kPartCols;
  }

  // Columns of CTA `part`'s part of a row that softmax's valid length keeps (all without one).
  static __device__ __forceinline__ int valid_cols(const RowParams& p, long long row, int part) {
    return Cfg::kValidLen ? min(max(p.valid_len[row] - part * kPartCols, 0), kPartCols) : kPartCols;
  }

  // RMSNorm with a residual: v += the residual's vector at res, rounded as stored, and written to
  // res_out.
  static __device__ __forceinline__ void add_residual(float (&v)[kVec], const typename In::raw* res,
                                                      typename In::raw* res_out) {
    float r[kVec];
    load_vec<Cfg::kIn, kVec>(res, r);
#pragma unroll
    for (int e = 0; e < kVec; ++e) v[e] = In::to_float(In::from_float(v[e] + r[e]));
    store_vec<Cfg::kIn, kVec>(res_out, v);
  }

  // The norms' weight and LayerNorm's bias over one CTA part, from global or shared memory.
  struct Affine {
    const typename In::raw* w;
    const typename In::raw* b;
  };
  static __device__ __forceinline__ Affine global_affine(const RowParams& p, int part) {
    using InRaw = typename In::raw;
    // Only the ones the op has (no arithmetic on the null pointers of the others).
    const InRaw* w = Cfg::kOp == RowOpKind::softmax ? nullptr : static_cast<const InRaw*>(p.weight) + part * kPartCols;
    const InRaw* b = Cfg::kOp == RowOpKind::layernorm ? static_cast<const InRaw*>(p.bias) + part * kPartCols : nullptr;
    return {w, b};
  }

  // The norms' output of vector vec of the part: (v - shift) * scale * weight (+ bias).
  static __device__ __forceinline__ void normalize(float (&v)[kVec], Affine a, int vec, float shift, float scale) {
    float w[kVec], b[kVec];
    load_vec<Cfg::kIn, kVec>(a.w + vec * kVec, w);
    if (Cfg::kOp == RowOpKind::layernorm) load_vec<Cfg::kIn, kVec>(a.b + vec * kVec, b);
#pragma unroll
    for (int e = 0; e < kVec; ++e)
      v[e] = (v[e] - shift) * scale * w[e] + (Cfg::kOp == RowOpKind::layernorm ? b[e] : 0.0f);
  }

  static constexpr int kPartBytes = kPartCols * int(sizeof(typename In::raw));
  static constexpr int kStageBytes = kPartBytes * (Cfg::kResidual ? 2 : 1);  // x's part, then the residual's
  // The norms' weight (then LayerNorm's bias) over the part, which a persistent CTA keeps in shared
  // memory: its part never changes. Read from global memory after each row's reduction, they
  // missed L1 (ncu: 0.03% hits) and put an L2 round trip between every row's exchange and stores.
  static constexpr int kAffineBytes =
      Cfg::kOp == RowOpKind::softmax ? 0 : kPartBytes * (Cfg::kOp == RowOpKind::layernorm ? 2 : 1);

  // Softmax's max and sum over a thread's values keep kChains partials: one chain of an FMNMX or
  // FADD per value would run at the instructions' latency.
  static constexpr int kChains = kIters * kVec >= 16 ? 4 : 1;
};

}  // namespace gf

#pragma once
// The streaming path, for rows too long for registers: pass 1 gathers the op's statistics
// (Op::stream_add), the op finishes them over the row (Op::stream_finish), and pass 2 reads the
// part again (from L2 mostly, or the shared-memory stage of a bulk kernel) and writes it
// (Op::stream_apply). Nothing is kept in registers between the passes.
#include "rowops/row.cuh"

namespace gf {

template <class Cfg, class Op>
struct Streaming : Row<Cfg> {
  using R = Row<Cfg>;
  using R::kGroup, R::kPartVecs, R::kVec, R::add_residual, R::valid_cols;
  using In = typename R::In;
  using Out = typename R::Out;
  using Affine = typename R::Affine;

  // Two passes over this CTA's part of a row, x and res (global or shared memory), nothing kept in
  // registers between them (LayerNorm reads the part once more, for the centred variance). Every
  // streaming CTA has a row: one per CTA (grid = rows), or the persistent kernels' next one.
  // reduce_row(v) combines the threads' values over the row (reduce_cta, then push_cluster).
  template <class ReduceRow>
  static __device__ __forceinline__ void one_row(const RowParams& p, ReduceRow reduce_row, int lane_in_group, int part,
                                                 long long base, long long row, const typename In::raw* x,
                                                 const typename In::raw* res, Affine affine) {
    using InRaw = typename In::raw;
    InRaw* res_out = static_cast<InRaw*>(p.residual_out) + base;
    const int limit = valid_cols(p, row, part);
    // Pass 1: per-thread statistics (Op::stream_add), a vector at a time.
    auto st = Op::stream_start(p);
#pragma unroll 4
    for (int vec = lane_in_group; vec < kPartVecs; vec += kGroup) {
      float v[kVec];
      load_vec<Cfg::kIn, kVec>(x + vec * kVec, v);
      if (Cfg::kOp == RowOpKind::rmsnorm && Cfg::kResidual) {
        add_residual(v, res + vec * kVec, res_out + vec * kVec);
        // Pass 2 reads the sum where it read x: each thread rewrites only its own vectors.
        if (Cfg::kBulk) store_vec<Cfg::kIn, kVec>(const_cast<InRaw*>(x) + vec * kVec, v);
      }
      Op::stream_add(st, v, vec, p, limit);
    }
    const InRaw* src = Cfg::kOp == RowOpKind::rmsnorm && Cfg::kResidual && !Cfg::kBulk ? res_out : x;
    const auto t = Op::stream_finish(st, reduce_row, p, src, lane_in_group);
    // Pass 2: read again, write.
#pragma unroll 4
    for (int vec = lane_in_group; vec < kPartVecs; vec += kGroup) {
      float v[kVec];
      load_vec<Cfg::kIn, kVec>(src + vec * kVec, v);
      Op::stream_apply(v, vec, t, p, limit, affine);
      store_vec<Cfg::kOut, kVec>(static_cast<typename Out::raw*>(p.y) + base + vec * kVec, v);
    }
  }
};

}  // namespace gf

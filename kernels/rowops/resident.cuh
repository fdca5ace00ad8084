#pragma once
// The register path: a thread group holds its part of a row in registers (kIters vectors of kVec
// a thread), so the row is read once and written once; the op (Op::resident) turns the values
// into outputs in place.
#include "rowops/row.cuh"

namespace gf {

template <class Cfg, class Op>
struct Resident : Row<Cfg> {
  using R = Row<Cfg>;
  using R::kGroup, R::kIters, R::kPackedMax, R::kPartCols, R::kPartVecs, R::kVec, R::add_residual, R::valid_cols;
  using In = typename R::In;
  using Out = typename R::Out;
  using Words = typename R::Words;
  using Affine = typename R::Affine;

  // One row (part) held in registers: x and res (global or shared memory) are read once, the
  // statistics reduced over the row and the outputs written from the registers. loaded(w) runs
  // once every value read has landed (a bulk kernel hands the stage back): w is computed from all
  // of them. A barrier alone would not do: it does not wait for shared-memory reads still queued,
  // and a bulk copy's writes do not queue behind them (verification caught rows overwritten).
  template <class ReduceRow, class Loaded>
  static __device__ __forceinline__ void one_row(const RowParams& p, ReduceRow reduce_row, Loaded loaded,
                                                 int lane_in_group, int part, bool live, long long base, long long row,
                                                 const typename In::raw* x, const typename In::raw* res,
                                                 Affine affine) {
    float v[kIters][kVec];
    Words w;  // kPackedMax: x as loaded
    const int limit = live ? valid_cols(p, row, part) : kPartCols;
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const int vec = it * kGroup + lane_in_group, col = vec * kVec;  // column within the part
      if (live && vec < kPartVecs) {
        if constexpr (kPackedMax)
          load_words<kVec / 2>(x + col, w[it]);
        else
          load_vec<Cfg::kIn, kVec>(x + col, v[it]);
        if (Cfg::kOp == RowOpKind::rmsnorm && Cfg::kResidual)
          add_residual(v[it], res + col, static_cast<typename In::raw*>(p.residual_out) + base + col);
      }
    }

    Op::resident(p, v, w, reduce_row, loaded, live, limit, lane_in_group, affine);

#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const int vec = it * kGroup + lane_in_group;
      if (live && vec < kPartVecs)
        store_vec<Cfg::kOut, kVec>(static_cast<typename Out::raw*>(p.y) + base + vec * kVec, v[it]);
    }
  }
};

}  // namespace gf

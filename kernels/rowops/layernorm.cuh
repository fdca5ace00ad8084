#pragma once
// LayerNorm over a row: (x - mean) / sqrt(var + eps) * weight + bias, in fp32: RMSNorm about the
// mean, plus a bias. The variance is taken of the centred values (a second look at them):
// E[x^2] - mean^2 would cancel when the mean is large against the spread.
#include "rowops/rmsnorm.cuh"

namespace gf {

template <class Cfg>
struct LayerNorm : RmsNorm<Cfg> {
  using R = RmsNorm<Cfg>;
  using R::kCols, R::kGroup, R::kIters, R::kPartCols, R::kPartVecs, R::kVec, R::normalize, R::scale_resident;
  using Words = typename R::Words;
  using Affine = typename R::Affine;
  using Transform = typename R::Transform;
  using In = typename R::In;

  // The register path (see Softmax::resident): the mean, then RMSNorm's scaling about it.
  template <class ReduceRow, class Loaded>
  static __device__ __forceinline__ void resident(const RowParams& p, float (&v)[kIters][kVec], Words&,
                                                  ReduceRow reduce_row, Loaded loaded, bool live, int,
                                                  int lane_in_group, Affine affine) {
    float s = 0.0f;
#pragma unroll
    for (int it = 0; it < kIters; ++it)
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        if ((it * kGroup + lane_in_group) * kVec + e < kPartCols && live) s += v[it][e];
    loaded(s);
    const float mean = reduce_row(make_float2(s, 0.0f)).x / kCols;
    scale_resident(
        p, v, reduce_row, [](float) {}, live, lane_in_group, affine, mean);
  }

  // The streaming path: pass 1 sums the values, then the centred squares are summed over the
  // part read once more, then pass 2 normalizes.
  struct Stream {
    float s;
  };
  static __device__ __forceinline__ Stream stream_start(const RowParams&) { return {0.0f}; }
  static __device__ __forceinline__ void stream_add(Stream& st, float (&v)[kVec], int, const RowParams&, int) {
    float vs = 0.0f;
#pragma unroll
    for (int e = 0; e < kVec; ++e) vs += v[e];
    st.s += vs;
  }
  template <class ReduceRow, class InRaw>
  static __device__ __forceinline__ Transform stream_finish(const Stream& st, ReduceRow reduce_row, const RowParams& p,
                                                            const InRaw* src, int lane_in_group) {
    const float shift = reduce_row(make_float2(st.s, 0.0f)).x / kCols;
    float ss = 0.0f;
#pragma unroll 4
    for (int vec = lane_in_group; vec < kPartVecs; vec += kGroup) {
      float v[kVec];
      load_vec<Cfg::kIn, kVec>(src + vec * kVec, v);
      float vs = 0.0f;
#pragma unroll
      for (int e = 0; e < kVec; ++e) vs += (v[e] - shift) * (v[e] - shift);
      ss += vs;
    }
    return {shift, rsqrtf(reduce_row(make_float2(ss, 0.0f)).x / kCols + p.eps)};
  }
};

}  // namespace gf

#pragma once
// RMSNorm over a row: x / sqrt(mean(x^2) + eps) * weight, in fp32, after x += residual where the
// op has one (the sum, rounded to x's dtype, is written out too: see the data paths).
#include "rowops/reduce.cuh"

namespace gf {

template <class Cfg>
struct RmsNorm : Reduce<Cfg> {
  using R = Reduce<Cfg>;
  using R::kCols, R::kGroup, R::kIters, R::kPartCols, R::kPartVecs, R::kVec, R::normalize;
  using Words = typename R::Words;
  using Affine = typename R::Affine;

  // The register path's norm about `shift` (0 here; LayerNorm's mean): the sum of squares of
  // v - shift over the row, then every value scaled by its reciprocal root and the weight (and
  // LayerNorm's bias). loaded(ss) runs once every value read has landed.
  template <class ReduceRow, class Loaded>
  static __device__ __forceinline__ void scale_resident(const RowParams& p, float (&v)[kIters][kVec],
                                                        ReduceRow reduce_row, Loaded loaded, bool live,
                                                        int lane_in_group, Affine affine, float shift) {
    float ss = 0.0f;
#pragma unroll
    for (int it = 0; it < kIters; ++it)
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        if ((it * kGroup + lane_in_group) * kVec + e < kPartCols && live) {
          const float d = v[it][e] - shift;
          ss += d * d;
        }
    loaded(ss);
    const float rstd = rsqrtf(reduce_row(make_float2(ss, 0.0f)).x / kCols + p.eps);
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const int vec = it * kGroup + lane_in_group;
      if (live && vec < kPartVecs) normalize(v[it], affine, vec, shift, rstd);
    }
  }

  // The register path (see Softmax::resident).
  template <class ReduceRow, class Loaded>
  static __device__ __forceinline__ void resident(const RowParams& p, float (&v)[kIters][kVec], Words&,
                                                  ReduceRow reduce_row, Loaded loaded, bool live, int,
                                                  int lane_in_group, Affine affine) {
    scale_resident(p, v, reduce_row, loaded, live, lane_in_group, affine, 0.0f);
  }

  // The streaming path: pass 1 sums the squares, pass 2 scales (see Softmax's).
  struct Stream {
    float s2;
  };
  static __device__ __forceinline__ Stream stream_start(const RowParams&) { return {0.0f}; }
  static __device__ __forceinline__ void stream_add(Stream& st, float (&v)[kVec], int, const RowParams&, int) {
    float vs2 = 0.0f;
#pragma unroll
    for (int e = 0; e < kVec; ++e) vs2 += v[e] * v[e];
    st.s2 += vs2;
  }
  struct Transform {
    float shift, scale;
  };
  template <class ReduceRow, class InRaw>
  static __device__ __forceinline__ Transform stream_finish(const Stream& st, ReduceRow reduce_row, const RowParams& p,
                                                            const InRaw*, int) {
    return {0.0f, rsqrtf(reduce_row(make_float2(st.s2, 0.0f)).x / kCols + p.eps)};
  }
  static __device__ __forceinline__ void stream_apply(float (&v)[kVec], int vec, const Transform& t, const RowParams&,
                                                      int, Affine affine) {
    normalize(v, affine, vec, t.shift, t.scale);
  }
};

}  // namespace gf

#pragma once
// Softmax over a row: e^(t - max t) / sum, t = x * scale, in fp32. NaN and inf behave as in torch
// (a NaN or +inf anywhere makes the row NaN; a row with nothing above -inf is zeros with a valid
// length, NaN without); elements at or past a valid length are 0.
//
// The register path takes each exponential once, against the thread's own max, and rebases the
// thread's sum and values to the row's max once it is known; the streaming path keeps a running
// (max, sum) rebased once per vector. Every exponential is taken of a difference computed exactly
// (an FMA) while the logits are below kExactLimit.
#include "rowops/reduce.cuh"

namespace gf {

template <class Cfg>
struct Softmax : Reduce<Cfg> {
  using R = Reduce<Cfg>;
  using R::kChains, R::kGroup, R::kIters, R::kLog2e, R::kPackedMax, R::kVec, R::exp_approx, R::inf, R::nan;
  using Words = typename R::Words;
  using Affine = typename R::Affine;

  // Below this |t| (or |t| log2 e), x * scale - m is taken exactly. Past it the roundings that the
  // exact forms carry along (of m, of h: up to half an ulp, 64 at 2^30) could overflow e^() on
  // their own, so t is rounded first, as torch does, and the max's own term is e^0.
  static constexpr float kExactLimit = 1073741824.0f;  // 2^30
  // t - m for t = x * fold: exactly (one FMA), or from t rounded first.
  static __device__ __forceinline__ float t_minus(float x, float fold, float m, bool exact) {
    return exact ? fmaf(x, fold, -m) : x * fold - m;
  }
  static constexpr u32 kNegInfBf16x2 = 0xff80ff80u;

  // Softmax's t = x * scale. The max of t is scale * max x for a positive scale, which the
  // exponentials then fold in (fold_scale); any other scale is applied to x first, and 1 folded.
  static __device__ __forceinline__ bool prescaled(const RowParams& p) { return !(p.scale > 0.0f); }
  static __device__ __forceinline__ float fold_scale(const RowParams& p) { return prescaled(p) ? 1.0f : p.scale; }

  // The row's (max, sum) to the output transform e^(t - shift) * scale. A NaN sum (a NaN or a
  // +inf in the row) makes every output NaN; a row with nothing above -inf gives zeros with valid
  // lengths (padding) and NaN without (as torch).
  static __device__ __forceinline__ void finish_softmax(float2 t, float& shift, float& scale) {
    const bool empty_row = t.x == -inf();
    shift = empty_row ? 0.0f : t.x;
    scale = t.y != t.y ? nan() : empty_row ? (Cfg::kValidLen ? 0.0f : nan()) : 1.0f / t.y;
  }

  // The thread's max of its values v (x * scale when prescaled), masked ones set to -inf.
  static __device__ __forceinline__ float max_of_values(const RowParams& p, float (&v)[kIters][kVec], bool live,
                                                        int limit, int lane_in_group) {
    if (prescaled(p)) {
#pragma unroll
      for (int it = 0; it < kIters; ++it)
#pragma unroll
        for (int e = 0; e < kVec; ++e) v[it][e] *= p.scale;
    }
    float mc[kChains];
#pragma unroll
    for (int c = 0; c < kChains; ++c) mc[c] = -inf();
#pragma unroll
    for (int it = 0; it < kIters; ++it)
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const int col = (it * kGroup + lane_in_group) * kVec + e;
        if (!(live && col < limit)) v[it][e] = -inf();
        mc[(it * kVec + e) % kChains] = fmaxf(mc[(it * kVec + e) % kChains], v[it][e]);
      }
    float m = mc[0];
#pragma unroll
    for (int c = 1; c < kChains; ++c) m = fmaxf(m, mc[c]);
    return m;
  }

  // The same over bf16 pairs as loaded (w), one max.bf16x2 per two values (it drops NaN, as
  // fmaxf; ptxas fuses them three operands at a time); masked halves set to -inf. Unpacks w into v.
  static __device__ __forceinline__ float max_of_pairs(Words& w, float (&v)[kIters][kVec], bool live, int limit,
                                                       int lane_in_group) {
    u32 mc[kChains];
#pragma unroll
    for (int c = 0; c < kChains; ++c) mc[c] = kNegInfBf16x2;
#pragma unroll
    for (int it = 0; it < kIters; ++it)
#pragma unroll
      for (int i = 0; i < kVec / 2; ++i) {
        const int col = (it * kGroup + lane_in_group) * kVec + 2 * i;
        if (!(live && col + 1 < limit))
          w[it][i] = !(live && col < limit) ? kNegInfBf16x2 : (w[it][i] & 0xffffu) | (kNegInfBf16x2 & 0xffff0000u);
        mc[(it * kVec / 2 + i) % kChains] = ptx::max_bf16x2(mc[(it * kVec / 2 + i) % kChains], w[it][i]);
        unpack_bf16x2(w[it][i], v[it][2 * i], v[it][2 * i + 1]);
      }
    float m = -inf();
#pragma unroll
    for (int c = 0; c < kChains; ++c) {
      float lo, hi;
      unpack_bf16x2(mc[c], lo, hi);
      m = fmaxf(m, fmaxf(lo, hi));
    }
    return m;
  }

  // The register path: v (and w, as loaded, with kPackedMax) holds the thread's values of the part,
  // limit of them valid; the outputs replace them. loaded(x) runs once every value read has landed.
  template <class ReduceRow, class Loaded>
  static __device__ __forceinline__ void resident(const RowParams& p, float (&v)[kIters][kVec], Words& w,
                                                  ReduceRow reduce_row, Loaded loaded, bool live, int limit,
                                                  int lane_in_group, Affine) {
    // e^(t - m) for t = x * fold is 2^(x * slope - h), slope = fold * log2(e) and h = m_x * slope
    // rounded (m_x the thread's max of x): one FFMA and one MUFU op an element. The FFMA's
    // product is exact, so the exponent is (x - m_x) * slope + r, with r = m_x * slope - h the
    // same for all of the thread's values; r and the rounding of m = m_x * fold come out once
    // per thread (corr). Rounding t or t * log2(e) before the subtraction would cost 3e-4 of
    // relative error at |t| = 1e4.
    const float fold = fold_scale(p);
    float m_x;
    if constexpr (kPackedMax) {
      if (prescaled(p)) {
#pragma unroll
        for (int it = 0; it < kIters; ++it)
#pragma unroll
          for (int i = 0; i < kVec / 2; ++i) unpack_bf16x2(w[it][i], v[it][2 * i], v[it][2 * i + 1]);
        m_x = max_of_values(p, v, live, limit, lane_in_group);
      } else {
        m_x = max_of_pairs(w, v, live, limit, lane_in_group);
      }
    } else {
      m_x = max_of_values(p, v, live, limit, lane_in_group);
    }
    loaded(m_x);
    const float m = m_x * fold;
    // e^t against the thread's own max now, rebased to the row's once it is known: one exp per
    // element, one reduction. A NaN (or inf - inf) makes the sum, and so every output, NaN;
    // fmaxf drops NaN, so a thread with nothing above -inf looks for one.
    float sum = 0.0f, corr = 1.0f;
    if (m == -inf()) {
#pragma unroll
      for (int it = 0; it < kIters; ++it)
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          if (v[it][e] != v[it][e]) sum = nan();
          v[it][e] = 0.0f;
        }
    } else {
      float sc[kChains] = {};
      const float slope = fold * kLog2e, h = m_x * slope;
      if (fabsf(h) < kExactLimit) {
#pragma unroll
        for (int it = 0; it < kIters; ++it)
#pragma unroll
          for (int e = 0; e < kVec; ++e) {
            v[it][e] = ptx::exp2_approx(fmaf(v[it][e], slope, -h));
            sc[(it * kVec + e) % kChains] += v[it][e];
          }
        corr = ptx::exp2_approx(fmaf(fmaf(m_x, fold, -m), kLog2e, -fmaf(m_x, slope, -h)));
      } else {  // past kExactLimit (or inf, NaN): t rounded first, then t - m
#pragma unroll
        for (int it = 0; it < kIters; ++it)
#pragma unroll
          for (int e = 0; e < kVec; ++e) {
            v[it][e] = exp_approx(t_minus(v[it][e], fold, m, false));
            sc[(it * kVec + e) % kChains] += v[it][e];
          }
      }
#pragma unroll
      for (int c = 0; c < kChains; ++c) sum += sc[c];
      sum *= corr;
    }
    const float2 t = reduce_row(make_float2(m, sum));
    float shift, scale;
    finish_softmax(t, shift, scale);
    const float factor = m == -inf() ? scale : exp_approx(m - shift) * scale * corr;
#pragma unroll
    for (int it = 0; it < kIters; ++it)
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        const int col = (it * kGroup + lane_in_group) * kVec + e;
        v[it][e] = col < limit ? v[it][e] * factor : 0.0f;  // masked: 0 even in a NaN row
      }
  }

  // The streaming path. Pass 1 keeps a running max m of t and sum s of e^(t - m), rebased once per
  // vector: each vector's terms are summed apart first, so the chain carried from vector to vector
  // is one fmax and one FMA, not one exp per element. fmaxf drops NaN, but e^(NaN - m) carries it
  // into s, except while m is still -inf.
  struct Stream {
    float m, s;
    bool has_nan;
    float fold;
  };
  static __device__ __forceinline__ Stream stream_start(const RowParams& p) {
    return {-inf(), 0.0f, false, fold_scale(p)};
  }

  // Vector vec of the part (kVec values v, limit of the part's columns valid) into the state.
  static __device__ __forceinline__ void stream_add(Stream& st, float (&v)[kVec], int vec, const RowParams& p,
                                                    int limit) {
    // m: the max of t = x * fold so far, rounded; the FMA takes x * fold - m exactly (below
    // kExactLimit).
    float vm = -inf();
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      v[e] = vec * kVec + e < limit ? (prescaled(p) ? v[e] * p.scale : v[e]) : -inf();
      vm = fmaxf(vm, v[e]);
    }
    const float m_new = fmaxf(st.m, vm * st.fold);
    if (m_new != -inf()) {
      const bool exact = fabsf(m_new) < kExactLimit;
      float add = 0.0f;
#pragma unroll
      for (int e = 0; e < kVec; ++e)
        add += exp_approx(t_minus(v[e], st.fold, m_new, exact));  // +inf: e^(inf - inf), NaN as torch
      st.s = (st.m == -inf() ? 0.0f : st.s * exp_approx(st.m - m_new)) + add;
      st.m = m_new;
    } else {  // nothing above -inf yet: s stays 0, but a NaN must not be lost
#pragma unroll
      for (int e = 0; e < kVec; ++e) st.has_nan |= v[e] != v[e];
    }
  }

  // The output transform e^(t - shift) * scale, t - shift taken exactly where pass 1 took it so.
  struct Transform {
    float shift, scale, log2_scale;
    bool exact;
  };
  template <class ReduceRow, class InRaw>
  static __device__ __forceinline__ Transform stream_finish(const Stream& st, ReduceRow reduce_row, const RowParams& p,
                                                            const InRaw*, int) {
    Transform t{0.0f, 1.0f, 0.0f, false};
    finish_softmax(reduce_row(make_float2(st.m, st.has_nan ? nan() : st.s)), t.shift, t.scale);
    // e^(t - shift) * scale as two FMAs and one MUFU op: the scale joins the exponent (log2 of 0
    // is -inf, which gives 0; of NaN, NaN), after the subtraction.
    t.log2_scale = __log2f(t.scale);
    t.exact = !prescaled(p) && fabsf(t.shift) < kExactLimit;
    return t;
  }

  // Pass 2: the outputs of vector vec, read again.
  static __device__ __forceinline__ void stream_apply(float (&v)[kVec], int vec, const Transform& t, const RowParams& p,
                                                      int limit, Affine) {
    // t - shift as pass 1 took it: exactly, or from t rounded (prescaled, or past kExactLimit).
#pragma unroll
    for (int e = 0; e < kVec; ++e) {
      const float d = t_minus(v[e], p.scale, t.shift, t.exact);
      v[e] = vec * kVec + e < limit ? ptx::exp2_approx(fmaf(d, kLog2e, t.log2_scale)) : 0.0f;
    }
  }
};

}  // namespace gf

#pragma once
// Row-wise memory-bound ops: softmax, RMSNorm (optionally adding a residual first) and LayerNorm
// over the last dimension, fp32 math, any of bf16/f16/f32 in and out.
//
// Every row is read once and written once: a group of kGroup threads holds its part of the row in
// registers (kIters vectors of kVec elements per thread). Short rows share a CTA (kRowsPerCta
// groups); long rows are split over a cluster of kCluster CTAs, whose partial sums meet in
// distributed shared memory (pushed with st.async). Rows too long for that stream (kStream): one
// pass gathers the statistics (online softmax; LayerNorm takes a second for the centred
// variance), the last reads the row again (from L2, mostly) and writes it. With kBulk the CTAs
// are persistent and the parts (and their residuals) arrive in a ring of kStages shared-memory
// stages by bulk copies, the next rows' copies in flight while this row is worked on: read from
// the stage into registers, or by both streaming passes.
// The instantiating source defines Cfg.
#include "gemmforge/codes.hpp"
#include "ptx/base.cuh"
#include "ptx/convert.cuh"
#include "ptx/mbarrier.cuh"
#include "ptx/sync.cuh"
#include "ptx/tma.cuh"

namespace gf {


struct RowParams {
  const void* x;
  void* y;
  const void* weight;    // norms: kCols elements, x's dtype
  const void* bias;      // LayerNorm: kCols elements, x's dtype
  const void* residual;  // RMSNorm with kResidual: added to x first
  void* residual_out;    // ... and the sum written here (x's dtype)
  const int* valid_len;  // softmax with kValidLen: elements at or past valid_len[row] are masked (output 0)
  long long rows;
  long long hand_back_from;  // bulk kernels: the rows from here on hand their L2 lines back (see bulk_rows)
  float scale;               // softmax: x * scale
  float eps;                 // norms
};

template <DType kType>
struct Elem;
template <>
struct Elem<DType::bf16> {
  using raw = u16;
  static __device__ __forceinline__ float to_float(u16 v) { return ptx::bf16_to_float(v); }
  static __device__ __forceinline__ u16 from_float(float v) { return u16(ptx::pack_bf16x2(v, 0.0f) & 0xffff); }
};
template <>
struct Elem<DType::f16> {
  using raw = u16;
  static __device__ __forceinline__ float to_float(u16 v) { return ptx::f16_to_float(v); }
  static __device__ __forceinline__ u16 from_float(float v) { return u16(ptx::pack_f16x2(v, 0.0f) & 0xffff); }
};
template <>
struct Elem<DType::f32> {
  using raw = float;
  static __device__ __forceinline__ float to_float(float v) { return v; }
  static __device__ __forceinline__ float from_float(float v) { return v; }
};

// kN 32-bit words at p (16-byte aligned, kN a multiple of 4).
template <int kN>
__device__ __forceinline__ void load_words(const void* p, u32 (&w)[kN]) {
#pragma unroll
  for (int i = 0; i < kN / 4; ++i) {
    const uint4 q = static_cast<const uint4*>(p)[i];
    w[4 * i] = q.x, w[4 * i + 1] = q.y, w[4 * i + 2] = q.z, w[4 * i + 3] = q.w;
  }
}

// The two bf16 of a word (the lower address in the low half): each is the top half of its float,
// one shift or mask.
__device__ __forceinline__ void unpack_bf16x2(u32 w, float& lo, float& hi) {
  lo = __uint_as_float(w << 16);
  hi = __uint_as_float(w & 0xffff0000u);
}

// kN consecutive elements at p (aligned to their total size, a power of two up to 64 bytes).
template <DType kType, int kN>
__device__ __forceinline__ void load_vec(const void* p, float (&out)[kN]) {
  using E = Elem<kType>;
  using R = typename E::raw;
  constexpr int kBytes = kN * int(sizeof(R));
  if constexpr (kBytes % 16 == 0) {
    union {
      uint4 q[kBytes / 16];
      R r[kN];
    } u;
#pragma unroll
    for (int i = 0; i < kBytes / 16; ++i) u.q[i] = static_cast<const uint4*>(p)[i];
#pragma unroll
    for (int i = 0; i < kN; ++i) out[i] = E::to_float(u.r[i]);
  } else {
#pragma unroll
    for (int i = 0; i < kN; ++i) out[i] = E::to_float(static_cast<const R*>(p)[i]);
  }
}

template <DType kType, int kN>
__device__ __forceinline__ void store_vec(void* p, const float (&in)[kN]) {
  using E = Elem<kType>;
  using R = typename E::raw;
  constexpr int kBytes = kN * int(sizeof(R));
  if constexpr (kBytes % 16 == 0) {
    union {
      uint4 q[kBytes / 16];
      u32 w[kBytes / 4];
      R r[kN];
    } u;
    if constexpr (kType == DType::f32) {
#pragma unroll
      for (int i = 0; i < kN; ++i) u.r[i] = in[i];
    } else {
      // Two 16-bit values a conversion (the lower address in the low half), not one each and a merge.
#pragma unroll
      for (int i = 0; i < kN / 2; ++i)
        u.w[i] =
            kType == DType::bf16 ? ptx::pack_bf16x2(in[2 * i], in[2 * i + 1]) : ptx::pack_f16x2(in[2 * i], in[2 * i + 1]);
    }
#pragma unroll
    for (int i = 0; i < kBytes / 16; ++i) static_cast<uint4*>(p)[i] = u.q[i];
  } else {
#pragma unroll
    for (int i = 0; i < kN; ++i) static_cast<R*>(p)[i] = E::from_float(in[i]);
  }
}

template <class Cfg>
struct RowOp {
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
  // Below this |t| (or |t| log2 e), x * scale - m is taken exactly. Past it the roundings that the
  // exact forms carry along (of m, of h: up to half an ulp, 64 at 2^30) could overflow e^() on
  // their own, so t is rounded first, as torch does, and the max's own term is e^0.
  static constexpr float kExactLimit = 1073741824.0f;  // 2^30
  // t - m for t = x * fold: exactly (one FMA), or from t rounded first.
  static __device__ __forceinline__ float t_minus(float x, float fold, float m, bool exact) {
    return exact ? fmaf(x, fold, -m) : x * fold - m;
  }
  static constexpr u32 kNegInfBf16x2 = 0xff80ff80u;
  // bf16 softmax may keep a resident row's words as loaded for a max of two lanes at a time.
  static constexpr bool kPackedMax = Cfg::kPairMax;
  static_assert(!kPackedMax || (Cfg::kOp == RowOpKind::softmax && Cfg::kIn == DType::bf16 && kVec % 8 == 0 && !Cfg::kStream),
                "The max over bf16 pairs is for bf16 softmax rows in registers, 16-byte vectors.");
  using Words = u32[kIters][kPackedMax ? kVec / 2 : 1];

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
      u32 slot, remote_bar;
      asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
                   : "=r"(slot)
                   : "r"(smem_addr(slots + part)), "r"(threadIdx.x));
      asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote_bar) : "r"(smem_addr(bar)), "r"(threadIdx.x));
      asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v2.f32 [%0], {%1, %2}, [%3];" ::"r"(slot),
                   "f"(v.x), "f"(v.y), "r"(remote_bar)
                   : "memory");
    }
    if (threadIdx.x == 0) ptx::mbar_arrive_expect_tx(bar, kCluster * sizeof(float2));
    ptx::mbar_wait_cluster(bar, parity);
    return butterfly<kCluster>(slots[threadIdx.x % kCluster]);
  }

  // Softmax's t = x * scale. The max of t is scale * max x for a positive scale, which the
  // exponentials then fold in (fold_scale); any other scale is applied to x first, and 1 folded.
  static __device__ __forceinline__ bool prescaled(const RowParams& p) { return !(p.scale > 0.0f); }
  static __device__ __forceinline__ float fold_scale(const RowParams& p) { return prescaled(p) ? 1.0f : p.scale; }

  static constexpr int kScratch = kRowsPerCta * kWarps;  // float2 slots of one CTA reduction

  static __device__ __forceinline__ float inf() { return __int_as_float(0x7f800000); }
  static __device__ __forceinline__ float nan() { return __int_as_float(0x7fffffff); }

  // The row's (max, sum) to the output transform e^(t - shift) * scale. A NaN sum (a NaN or a
  // +inf in the row) makes every output NaN; a row with nothing above -inf gives zeros with valid
  // lengths (padding) and NaN without (as torch).
  static __device__ __forceinline__ void finish_softmax(float2 t, float& shift, float& scale) {
    const bool empty_row = t.x == -inf();
    shift = empty_row ? 0.0f : t.x;
    scale = t.y != t.y ? nan() : empty_row ? (Cfg::kValidLen ? 0.0f : nan()) : 1.0f / t.y;
  }

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
    for (int e = 0; e < kVec; ++e) v[e] = (v[e] - shift) * scale * w[e] + (Cfg::kOp == RowOpKind::layernorm ? b[e] : 0.0f);
  }

  static constexpr int kBulkChunk = 16384;  // bytes per bulk copy
  static constexpr int kPartBytes = kPartCols * int(sizeof(typename In::raw));
  static constexpr int kStageBytes = kPartBytes * (Cfg::kResidual ? 2 : 1);  // x's part, then the residual's
  // The norms' weight (then LayerNorm's bias) over the part, which a persistent CTA keeps in shared
  // memory: its part never changes. Read from global memory after each row's reduction, they
  // missed L1 (ncu: 0.03% hits) and put an L2 round trip between every row's exchange and stores.
  static constexpr int kAffineBytes = Cfg::kOp == RowOpKind::softmax ? 0 : kPartBytes * (Cfg::kOp == RowOpKind::layernorm ? 2 : 1);

  // Two passes over this CTA's part of a row, x and res (global or shared memory), nothing kept in
  // registers between them (LayerNorm reads the part once more, for the centred variance). Every
  // streaming CTA has a row: one per CTA (grid = rows), or the persistent kernels' next one.
  // reduce_row(v) combines the threads' values over the row (reduce_cta, then push_cluster).
  template <class ReduceRow>
  static __device__ __forceinline__ void two_passes(const RowParams& p, ReduceRow reduce_row, int lane_in_group,
                                                    int part, long long base, long long row, const typename In::raw* x,
                                                    const typename In::raw* res, Affine affine) {
    using InRaw = typename In::raw;
    InRaw* res_out = static_cast<InRaw*>(p.residual_out) + base;
    const int limit = valid_cols(p, row, part);
    // Pass 1: per-thread statistics. Softmax keeps a running max m and sum s of e^(t - m),
    // rebased once per vector. Each vector's terms are summed apart first, so the chain carried
    // from vector to vector is one fmax and one FMA (softmax) or one add (norms), not one exp or
    // add per element.
    float m = -inf(), s = 0.0f, s2 = 0.0f;
    // Softmax: fmaxf drops NaN, but e^(NaN - m) carries it into s, except while m is still -inf.
    bool has_nan = false;
    const float fold = fold_scale(p);
#pragma unroll 4
    for (int vec = lane_in_group; vec < kPartVecs; vec += kGroup) {
      float v[kVec];
      load_vec<Cfg::kIn, kVec>(x + vec * kVec, v);
      if (Cfg::kOp == RowOpKind::rmsnorm && Cfg::kResidual) {
        add_residual(v, res + vec * kVec, res_out + vec * kVec);
        // Pass 2 reads the sum where it read x: each thread rewrites only its own vectors.
        if (Cfg::kBulk) store_vec<Cfg::kIn, kVec>(const_cast<InRaw*>(x) + vec * kVec, v);
      }
      if (Cfg::kOp == RowOpKind::softmax) {
        // m: the max of t = x * fold so far, rounded; the FMA takes x * fold - m exactly (below
        // kExactLimit).
        float vm = -inf();
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          v[e] = vec * kVec + e < limit ? (prescaled(p) ? v[e] * p.scale : v[e]) : -inf();
          vm = fmaxf(vm, v[e]);
        }
        const float m_new = fmaxf(m, vm * fold);
        if (m_new != -inf()) {
          const bool exact = fabsf(m_new) < kExactLimit;
          float add = 0.0f;
#pragma unroll
          for (int e = 0; e < kVec; ++e)
            add += exp_approx(t_minus(v[e], fold, m_new, exact));  // +inf: e^(inf - inf), NaN as torch
          s = (m == -inf() ? 0.0f : s * exp_approx(m - m_new)) + add;
          m = m_new;
        } else {  // nothing above -inf yet: s stays 0, but a NaN must not be lost
#pragma unroll
          for (int e = 0; e < kVec; ++e) has_nan |= v[e] != v[e];
        }
      } else {
        float vs = 0.0f, vs2 = 0.0f;
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          vs += v[e];
          vs2 += v[e] * v[e];
        }
        s += vs;
        s2 += vs2;
      }
    }
    float scale_out = 1.0f, shift = 0.0f, log2_scale = 0.0f;
    const InRaw* src = Cfg::kOp == RowOpKind::rmsnorm && Cfg::kResidual && !Cfg::kBulk ? res_out : x;
    if (Cfg::kOp == RowOpKind::softmax) {
      finish_softmax(reduce_row(make_float2(m, has_nan ? nan() : s)), shift, scale_out);
      // e^(t - shift) * scale_out as two FMAs and one MUFU op: the scale joins the exponent (log2
      // of 0 is -inf, which gives 0; of NaN, NaN), after the subtraction.
      log2_scale = __log2f(scale_out);
    } else if (Cfg::kOp == RowOpKind::rmsnorm) {
      scale_out = rsqrtf(reduce_row(make_float2(s2, 0.0f)).x / kCols + p.eps);
    } else {
      // LayerNorm: the mean, then the centred squares. E[x^2] - mean^2 would cancel when the
      // mean is large against the spread.
      shift = reduce_row(make_float2(s, 0.0f)).x / kCols;
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
      scale_out = rsqrtf(reduce_row(make_float2(ss, 0.0f)).x / kCols + p.eps);
    }
    // Pass 2: read again, write.
    const bool exact = !prescaled(p) && fabsf(shift) < kExactLimit;
#pragma unroll 4
    for (int vec = lane_in_group; vec < kPartVecs; vec += kGroup) {
      float v[kVec];
      load_vec<Cfg::kIn, kVec>(src + vec * kVec, v);
      if (Cfg::kOp == RowOpKind::softmax) {
        // t - shift as pass 1 took it: exactly, or from t rounded (prescaled, or past kExactLimit).
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const float d = t_minus(v[e], p.scale, shift, exact);
          v[e] = vec * kVec + e < limit ? ptx::exp2_approx(fmaf(d, kLog2e, log2_scale)) : 0.0f;
        }
      } else {
        normalize(v, affine, vec, shift, scale_out);
      }
      store_vec<Cfg::kOut, kVec>(static_cast<typename Out::raw*>(p.y) + base + vec * kVec, v);
    }
  }

  // Softmax's max and sum over a thread's values keep kChains partials: one chain of an FMNMX or
  // FADD per value would run at the instructions' latency.
  static constexpr int kChains = kIters * kVec >= 16 ? 4 : 1;

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
  static __device__ __forceinline__ float max_of_pairs(Words& w, float (&v)[kIters][kVec],
                                                       bool live, int limit, int lane_in_group) {
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

  // One row (part) held in registers: x and res (global or shared memory) are read once, the
  // statistics reduced over the row and the outputs written from the registers. loaded(w) runs
  // once every value read has landed (a bulk kernel hands the stage back): w is computed from all
  // of them. A barrier alone would not do: it does not wait for shared-memory reads still queued,
  // and a bulk copy's writes do not queue behind them (verification caught rows overwritten).
  template <class ReduceRow, class Loaded>
  static __device__ __forceinline__ void resident_row(const RowParams& p, ReduceRow reduce_row, Loaded loaded,
                                                      int lane_in_group, int part, bool live, long long base,
                                                      long long row, const typename In::raw* x,
                                                      const typename In::raw* res, Affine affine) {
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

    if (Cfg::kOp == RowOpKind::softmax) {
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
    } else {
      float mean = 0.0f;
      if (Cfg::kOp == RowOpKind::layernorm) {
        float s = 0.0f;
#pragma unroll
        for (int it = 0; it < kIters; ++it)
#pragma unroll
          for (int e = 0; e < kVec; ++e)
            if ((it * kGroup + lane_in_group) * kVec + e < kPartCols && live) s += v[it][e];
        loaded(s);
        mean = reduce_row(make_float2(s, 0.0f)).x / kCols;
      }
      float ss = 0.0f;
#pragma unroll
      for (int it = 0; it < kIters; ++it)
#pragma unroll
        for (int e = 0; e < kVec; ++e)
          if ((it * kGroup + lane_in_group) * kVec + e < kPartCols && live) {
            const float d = v[it][e] - mean;
            ss += d * d;
          }
      if (Cfg::kOp == RowOpKind::rmsnorm) loaded(ss);
      const float rstd = rsqrtf(reduce_row(make_float2(ss, 0.0f)).x / kCols + p.eps);
#pragma unroll
      for (int it = 0; it < kIters; ++it) {
        const int vec = it * kGroup + lane_in_group;
        if (live && vec < kPartVecs) normalize(v[it], affine, vec, mean, rstd);
      }
    }

#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const int vec = it * kGroup + lane_in_group;
      if (live && vec < kPartVecs)
        store_vec<Cfg::kOut, kVec>(static_cast<typename Out::raw*>(p.y) + base + vec * kVec, v[it]);
    }
  }

  // The L2 lines of a part at src (each 128-byte line that holds some of it) back to normal
  // eviction priority, a line a thread.
  static __device__ __forceinline__ void normal_priority(const void* src) {
    const u64 begin = reinterpret_cast<u64>(src), end = begin + kPartBytes;
    for (u64 line = (begin & ~u64(127)) + threadIdx.x * 128; line < end; line += kThreads * 128)
      ptx::l2_priority_normal(reinterpret_cast<const void*>(line));
  }

  // kBulk: persistent clusters, cluster c taking rows c, c + stride, ... Thread 0 keeps the next
  // kStages parts of x (and of the residual) in flight into a ring of shared-memory stages, each
  // completing on its mbarrier. A stage is refilled once every thread is done with it: after both
  // passes (kStream), or as soon as its row is in registers. Shared memory: the stages, the
  // affine parameters (kAffineBytes, copied in once), then kStages + 1 mbarriers.
  template <class ReduceRow>
  static __device__ __forceinline__ void bulk_rows(const RowParams& p, ReduceRow reduce_row, int lane_in_group,
                                                   int part) {
    static_assert(Cfg::kStages >= 1, "Bulk copies need at least one stage.");
    using InRaw = typename In::raw;
    extern __shared__ __align__(128) u8 stage_smem[];
    u8* affine_smem = stage_smem + Cfg::kStages * kStageBytes;
    u64* full = reinterpret_cast<u64*>(affine_smem + kAffineBytes);  // the stages', then the affine's
    const long long first = blockIdx.x / kCluster, stride = gridDim.x / kCluster;
    // One part's bytes from global memory to dst, completing on bar: a row's parts held last in
    // L2 until the row is done (hand_back), the affine parameters as usual.
    auto copy_part = [&](u8* dst, const void* src, u64* bar, bool row) {
      for (int off = 0; off < kPartBytes; off += kBulkChunk) {
        const u32 bytes = u32(min(kBulkChunk, kPartBytes - off));
        if (row)
          ptx::bulk_load_evict_last(dst + off, static_cast<const u8*>(src) + off, bytes, bar);
        else
          ptx::bulk_load(dst + off, static_cast<const u8*>(src) + off, bytes, bar);
      }
    };
    auto issue = [&](long long row, int stage) {
      const long long base = part_base(row, part);
      u8* dst = stage_smem + stage * kStageBytes;
      ptx::mbar_arrive_expect_tx(&full[stage], kStageBytes);
      copy_part(dst, static_cast<const InRaw*>(p.x) + base, &full[stage], true);
      if (Cfg::kResidual) copy_part(dst + kPartBytes, static_cast<const InRaw*>(p.residual) + base, &full[stage], true);
    };
    const Affine from_global = global_affine(p, part);
    if (threadIdx.x == 0) {
      for (int i = 0; i <= Cfg::kStages; ++i) ptx::mbar_init(&full[i], 1);
      ptx::mbar_fence_init();
      if (kAffineBytes > 0) {
        ptx::mbar_arrive_expect_tx(&full[Cfg::kStages], kAffineBytes);
        copy_part(affine_smem, from_global.w, &full[Cfg::kStages], false);
        if (Cfg::kOp == RowOpKind::layernorm) copy_part(affine_smem + kPartBytes, from_global.b, &full[Cfg::kStages], false);
      }
      for (int i = 0; i < Cfg::kStages && first + i * stride < p.rows; ++i) issue(first + i * stride, i);
    }
    __syncthreads();
    const InRaw* affine_w = reinterpret_cast<const InRaw*>(affine_smem);
    const Affine affine = {affine_w, affine_w + kPartCols};
    if (kAffineBytes > 0) ptx::mbar_wait(&full[Cfg::kStages], 0);
    int it = 0;
    for (long long row = first; row < p.rows; row += stride, ++it) {
      const int stage = it % Cfg::kStages;
      ptx::mbar_wait(&full[stage], u32(it / Cfg::kStages) & 1);
      const InRaw* x = reinterpret_cast<const InRaw*>(stage_smem + stage * kStageBytes);
      // The stage is free again: the next part goes into it.
      auto refill = [&] {
        if (threadIdx.x == 0 && row + Cfg::kStages * stride < p.rows) issue(row + Cfg::kStages * stride, stage);
      };
      // This part's lines in L2 back to normal priority (a 128-byte line a thread), so that they do
      // not outlive the kernel there. Only the last rows can still be in L2 at the end (the host
      // picks hand_back_from); done once the row is written, where few registers are live (inside
      // a register row's `read`, the addresses spilled).
      auto hand_back = [&] {
        if (row < p.hand_back_from) return;
        normal_priority(static_cast<const InRaw*>(p.x) + part_base(row, part));
        if (Cfg::kResidual) normal_priority(static_cast<const InRaw*>(p.residual) + part_base(row, part));
      };
      if constexpr (Cfg::kStream) {
        two_passes(p, reduce_row, lane_in_group, part, part_base(row, part), row, x, x + kPartCols, affine);
        // The residual sums each thread wrote into the stage, ordered before the copy over them.
        if (Cfg::kOp == RowOpKind::rmsnorm && Cfg::kResidual) ptx::fence_proxy_async_smem();
        __syncthreads();  // every thread is done with the stage (its last reads fed the stores)
        refill();
      } else {
        // The row is in registers once read: the stage refills while it is reduced and written.
        auto read = [&](float w) {
          // Waits for w, so for every value read from the stage. The predicate is taken from w's
          // bits through an opaque move: a compiler that proves w is never NaN cannot drop it.
          u32 bits;
          asm volatile("mov.b32 %0, %1;" : "=r"(bits) : "f"(w));
          __syncthreads_or(bits == 1u);
          refill();
        };
        resident_row(p, reduce_row, read, lane_in_group, part, true, part_base(row, part), row, x, x + kPartCols,
                     affine);
      }
      hand_back();
    }
  }

  static __device__ __forceinline__ void run(const RowParams& p) {
    const int group = threadIdx.x / kGroup, lane_in_group = threadIdx.x % kGroup;
    const int part = kCluster > 1 ? int(ptx::cluster_cta_rank()) : 0;
    const long long row = (long long)(blockIdx.x / kCluster) * kRowsPerCta + group;
    // Rows past the end still take part in the CTA's barriers, with nothing to load or store.
    const bool live = row < p.rows;
    const long long base = part_base(row, part);

    // reduce_row(v): v combined over the row, by every kernel. The slots (CTA scratch, cluster
    // slots and barriers) of consecutive reductions alternate between two sets: a cluster's CTAs
    // are at most one reduction apart (each waits for all of them), and a CTA's threads pass a
    // __syncthreads between reading one reduction's slots and writing the next's, so no value
    // lands in a slot still being read. No CTA leaves while a value is still on its way to it:
    // each waits for all of its reductions' values.
    __shared__ float2 scratch[2][kScratch];
    __shared__ float2 cluster_slots[2][kCluster];
    __shared__ u64 cluster_bar[2];
    if (kCluster > 1) {
      if (threadIdx.x == 0) {
        for (int i = 0; i < 2; ++i) ptx::mbar_init(&cluster_bar[i], 1);
        ptx::mbar_fence_init();
      }
      ptx::cluster_arrive();  // waited for before the first value is sent, so the loads overlap it
    }
    int reductions = 0;
    auto reduce_row = [&](float2 v) {
      const int n = reductions++, set = n & 1;
      const u32 parity = u32(n >> 1) & 1;
      v = reduce_cta(v, scratch[set], group, lane_in_group);
      if (kCluster == 1) return v;
      if (n == 0) ptx::cluster_wait();  // every CTA's barriers are initialised
      return push_cluster(v, cluster_slots[set], &cluster_bar[set], parity, part);
    };

    using InRaw = typename In::raw;
    auto nothing = [](float) {};
    if constexpr (Cfg::kBulk)
      bulk_rows(p, reduce_row, lane_in_group, part);
    else if constexpr (Cfg::kStream)
      two_passes(p, reduce_row, lane_in_group, part, base, row, static_cast<const InRaw*>(p.x) + base,
                 static_cast<const InRaw*>(p.residual) + base, global_affine(p, part));
    else
      resident_row(p, reduce_row, nothing, lane_in_group, part, live, base, row, static_cast<const InRaw*>(p.x) + base,
                   static_cast<const InRaw*>(p.residual) + base, global_affine(p, part));
  }
};

}  // namespace gf

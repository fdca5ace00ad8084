#pragma once
// Row-wise memory-bound ops: softmax, RMSNorm (optionally adding a residual first) and LayerNorm
// over the last dimension, fp32 math, any of bf16/f16/f32 in and out.
//
// Every row is read once and written once: a group of kGroup threads holds its part of the row in
// registers (kIters vectors of kVec elements per thread). Short rows share a CTA (kRowsPerCta
// groups); long rows are split over a cluster of kCluster CTAs, whose partial sums meet in
// distributed shared memory. Rows too long for that stream (kStream): one pass gathers the
// statistics (online softmax), a second reads the row again (from L2, mostly) and writes it.
// The instantiating source defines Cfg.
#include "ptx/base.cuh"
#include "ptx/convert.cuh"
#include "ptx/sync.cuh"

namespace gf {

enum RowOpKind { kSoftmax = 0, kRmsNorm = 1, kLayerNorm = 2 };
enum ElemType { kBf16 = 0, kF16 = 1, kF32 = 2 };

struct RowParams {
  const void* x;
  void* y;
  const void* weight;    // norms: kCols elements, x's dtype
  const void* bias;      // LayerNorm: kCols elements, x's dtype
  const void* residual;  // RMSNorm with kResidual: added to x first
  void* residual_out;    // ... and the sum written here (x's dtype)
  const int* valid_len;  // softmax with kValidLen: elements at or past valid_len[row] are masked (output 0)
  long long rows;
  float scale;  // softmax: x * scale
  float eps;    // norms
};

template <int kType>
struct Elem;
template <>
struct Elem<kBf16> {
  using raw = u16;
  static __device__ __forceinline__ float to_float(u16 v) { return ptx::bf16_to_float(v); }
  static __device__ __forceinline__ u16 from_float(float v) { return u16(ptx::pack_bf16x2(v, 0.0f) & 0xffff); }
};
template <>
struct Elem<kF16> {
  using raw = u16;
  static __device__ __forceinline__ float to_float(u16 v) { return ptx::f16_to_float(v); }
  static __device__ __forceinline__ u16 from_float(float v) { return u16(ptx::pack_f16x2(v, 0.0f) & 0xffff); }
};
template <>
struct Elem<kF32> {
  using raw = float;
  static __device__ __forceinline__ float to_float(float v) { return v; }
  static __device__ __forceinline__ float from_float(float v) { return v; }
};

// kN consecutive elements at p (aligned to their total size, a power of two up to 64 bytes).
template <int kType, int kN>
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

template <int kType, int kN>
__device__ __forceinline__ void store_vec(void* p, const float (&in)[kN]) {
  using E = Elem<kType>;
  using R = typename E::raw;
  constexpr int kBytes = kN * int(sizeof(R));
  if constexpr (kBytes % 16 == 0) {
    union {
      uint4 q[kBytes / 16];
      R r[kN];
    } u;
#pragma unroll
    for (int i = 0; i < kN; ++i) u.r[i] = E::from_float(in[i]);
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
  static_assert(Cfg::kStream || kIters * kVec <= 128, "More than 128 values per thread would spill.");
  using In = Elem<Cfg::kIn>;
  using Out = Elem<Cfg::kOut>;

  // Sum (or max) over the row: the thread's group, then the CTA's warps, then the cluster.
  template <bool kMax>
  static __device__ __forceinline__ float reduce(float v, float* scratch, int group, int lane_in_group) {
    const unsigned mask = 0xffffffffu;
#pragma unroll
    for (int o = (kGroup < 32 ? kGroup : 32) / 2; o > 0; o /= 2) {
      const float other = __shfl_xor_sync(mask, v, o);
      v = kMax ? fmaxf(v, other) : v + other;
    }
    if (kWarps > 1 || kCluster > 1) {
      float* slots = scratch + group * kWarps;  // one slot per warp of the group
      if (kWarps > 1 && lane_in_group % 32 == 0) slots[lane_in_group / 32] = v;
      __syncthreads();
      if (kWarps > 1) {
        v = slots[0];
#pragma unroll
        for (int w = 1; w < kWarps; ++w) v = kMax ? fmaxf(v, slots[w]) : v + slots[w];
      }
      if (kCluster > 1) {
        // Each CTA publishes its part's value; every CTA reads all of them.
        float* mine = scratch + kRowsPerCta * kWarps;
        if (threadIdx.x == 0) *mine = v;
        ptx::cluster_sync();
        float total = kMax ? -inf() : 0.0f;
#pragma unroll
        for (int r = 0; r < kCluster; ++r) {
          u32 remote;
          asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(smem_addr(mine)), "r"(r));
          float x;
          asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(x) : "r"(remote) : "memory");
          total = kMax ? fmaxf(total, x) : total + x;
        }
        v = total;
        ptx::cluster_sync();  // the slot is reused by the next reduction
      } else {
        __syncthreads();  // the slots are reused by the next reduction
      }
    }
    return v;
  }

  static __device__ __forceinline__ float inf() { return __int_as_float(0x7f800000); }

  // Two passes over the row, nothing kept in registers between them.
  static __device__ __forceinline__ void stream(const RowParams& p, float* scratch, int group, int lane_in_group,
                                                int part, bool live, long long base, long long row) {
    using InRaw = typename In::raw;
    const InRaw* x = static_cast<const InRaw*>(p.x) + base;
    const InRaw* res = static_cast<const InRaw*>(p.residual) + base;
    InRaw* res_out = static_cast<InRaw*>(p.residual_out) + base;
    int limit = kPartCols;
    if (Cfg::kValidLen && live) limit = min(max(p.valid_len[row] - part * kPartCols, 0), kPartCols);
    // Pass 1: per-thread statistics. Softmax keeps a running max m and sum s of exp(x - m).
    float m = -inf(), s = 0.0f, s2 = 0.0f, nan = 0.0f;
    for (int vec = lane_in_group; live && vec < kPartVecs; vec += kGroup) {
      float v[kVec];
      load_vec<Cfg::kIn, kVec>(x + vec * kVec, v);
      if (Cfg::kOp == kRmsNorm && Cfg::kResidual) {
        float r[kVec];
        load_vec<Cfg::kIn, kVec>(res + vec * kVec, r);
#pragma unroll
        for (int e = 0; e < kVec; ++e) v[e] = In::to_float(In::from_float(v[e] + r[e]));
        store_vec<Cfg::kIn, kVec>(res_out + vec * kVec, v);
      }
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        if (Cfg::kOp == kSoftmax) {
          if (vec * kVec + e >= limit) continue;
          const float xv = v[e] * p.scale;
          nan += xv != xv ? 1.0f : 0.0f;
          if (xv > m) {
            s = s * __expf(m - xv) + 1.0f;
            m = xv;
          } else {
            s += __expf(xv - m);
          }
        } else {
          s += v[e];
          s2 += v[e] * v[e];
        }
      }
    }
    float scale_out = 1.0f, shift = 0.0f;
    if (Cfg::kOp == kSoftmax) {
      const float mx = reduce<true>(m, scratch, group, lane_in_group);
      const float total_nan = reduce<false>(nan, scratch, group, lane_in_group);
      const float mine = m == -inf() ? 0.0f : s * __expf(m - mx);
      const float sum = reduce<false>(mine, scratch, group, lane_in_group);
      const bool empty_row = Cfg::kValidLen && mx == -inf();
      shift = total_nan > 0.0f ? __int_as_float(0x7fffffff) : mx;
      scale_out = empty_row ? 0.0f : 1.0f / sum;
    } else {
      const float sum = reduce<false>(s, scratch, group, lane_in_group);
      const float sumsq = reduce<false>(s2, scratch, group, lane_in_group);
      const float mean = Cfg::kOp == kLayerNorm ? sum / kCols : 0.0f;
      shift = mean;
      scale_out = rsqrtf(fmaxf(sumsq / kCols - mean * mean, 0.0f) + p.eps);
    }
    // Pass 2: read again, write.
    const InRaw* src = Cfg::kOp == kRmsNorm && Cfg::kResidual ? res_out : x;
    for (int vec = lane_in_group; live && vec < kPartVecs; vec += kGroup) {
      float v[kVec];
      load_vec<Cfg::kIn, kVec>(src + vec * kVec, v);
      if (Cfg::kOp == kSoftmax) {
#pragma unroll
        for (int e = 0; e < kVec; ++e)
          v[e] = vec * kVec + e < limit && scale_out != 0.0f ? __expf(v[e] * p.scale - shift) * scale_out : 0.0f;
      } else {
        float w[kVec], b[kVec];
        load_vec<Cfg::kIn, kVec>(static_cast<const InRaw*>(p.weight) + part * kPartCols + vec * kVec, w);
        if (Cfg::kOp == kLayerNorm)
          load_vec<Cfg::kIn, kVec>(static_cast<const InRaw*>(p.bias) + part * kPartCols + vec * kVec, b);
#pragma unroll
        for (int e = 0; e < kVec; ++e)
          v[e] = (v[e] - shift) * scale_out * w[e] + (Cfg::kOp == kLayerNorm ? b[e] : 0.0f);
      }
      store_vec<Cfg::kOut, kVec>(static_cast<typename Out::raw*>(p.y) + base + vec * kVec, v);
    }
  }

  static __device__ __forceinline__ void run(const RowParams& p) {
    __shared__ float scratch[kRowsPerCta * kWarps + 1];
    const int group = threadIdx.x / kGroup, lane_in_group = threadIdx.x % kGroup;
    const int part = kCluster > 1 ? int(ptx::cluster_cta_rank()) : 0;
    const long long row = (long long)(blockIdx.x / kCluster) * kRowsPerCta + group;
    // Rows past the end still take part in the CTA's barriers, with nothing to load or store.
    const bool live = row < p.rows;
    const long long base = row * kCols + (long long)part * kPartCols;  // first element of this CTA's part
    if (Cfg::kStream) {
      stream(p, scratch, group, lane_in_group, part, live, base, row);
      return;
    }

    float v[kIters][kVec];
    int limit = kPartCols;  // valid columns of this part (softmax valid_len)
    if (Cfg::kValidLen && live) limit = min(max(p.valid_len[row] - part * kPartCols, 0), kPartCols);
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const int vec = it * kGroup + lane_in_group, col = vec * kVec;  // column within the part
      if (live && vec < kPartVecs) {
        load_vec<Cfg::kIn, kVec>(static_cast<const typename In::raw*>(p.x) + base + col, v[it]);
        if (Cfg::kOp == kRmsNorm && Cfg::kResidual) {
          float r[kVec];
          load_vec<Cfg::kIn, kVec>(static_cast<const typename In::raw*>(p.residual) + base + col, r);
#pragma unroll
          for (int e = 0; e < kVec; ++e) v[it][e] = In::to_float(In::from_float(v[it][e] + r[e]));  // as stored
          store_vec<Cfg::kIn, kVec>(static_cast<typename In::raw*>(p.residual_out) + base + col, v[it]);
        }
      }
    }

    if (Cfg::kOp == kSoftmax) {
      float mx = -inf();
#pragma unroll
      for (int it = 0; it < kIters; ++it)
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          const int col = (it * kGroup + lane_in_group) * kVec + e;
          const bool in = live && col < limit;
          v[it][e] = in ? v[it][e] * p.scale : -inf();
          mx = fmaxf(mx, v[it][e]);
        }
      // fmaxf drops NaN; a NaN anywhere in the row makes every output NaN, as in torch.
      float nan = 0.0f;
#pragma unroll
      for (int it = 0; it < kIters; ++it)
#pragma unroll
        for (int e = 0; e < kVec; ++e) nan += v[it][e] != v[it][e] ? 1.0f : 0.0f;
      mx = reduce<true>(mx, scratch, group, lane_in_group);
      if (reduce<false>(nan, scratch, group, lane_in_group) > 0.0f) mx = __int_as_float(0x7fffffff);
      // With valid lengths, a row with no valid element gives zeros (padding), not NaN.
      const bool empty_row = Cfg::kValidLen && mx == -inf();
      float sum = 0.0f;
#pragma unroll
      for (int it = 0; it < kIters; ++it)
#pragma unroll
        for (int e = 0; e < kVec; ++e) {
          v[it][e] = empty_row ? 0.0f : __expf(v[it][e] - mx);  // masked elements: exp(-inf) = 0
          sum += v[it][e];
        }
      sum = reduce<false>(sum, scratch, group, lane_in_group);
      const float inv = empty_row ? 0.0f : 1.0f / sum;
#pragma unroll
      for (int it = 0; it < kIters; ++it)
#pragma unroll
        for (int e = 0; e < kVec; ++e) v[it][e] *= inv;
    } else {
      float mean = 0.0f;
      if (Cfg::kOp == kLayerNorm) {
        float s = 0.0f;
#pragma unroll
        for (int it = 0; it < kIters; ++it)
#pragma unroll
          for (int e = 0; e < kVec; ++e)
            if ((it * kGroup + lane_in_group) * kVec + e < kPartCols && live) s += v[it][e];
        mean = reduce<false>(s, scratch, group, lane_in_group) / kCols;
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
      const float rstd = rsqrtf(reduce<false>(ss, scratch, group, lane_in_group) / kCols + p.eps);
#pragma unroll
      for (int it = 0; it < kIters; ++it) {
        const int vec = it * kGroup + lane_in_group, col = vec * kVec;
        if (!live || vec >= kPartVecs) continue;
        float w[kVec], b[kVec];
        load_vec<Cfg::kIn, kVec>(static_cast<const typename In::raw*>(p.weight) + part * kPartCols + col, w);
        if (Cfg::kOp == kLayerNorm)
          load_vec<Cfg::kIn, kVec>(static_cast<const typename In::raw*>(p.bias) + part * kPartCols + col, b);
#pragma unroll
        for (int e = 0; e < kVec; ++e)
          v[it][e] = (v[it][e] - mean) * rstd * w[e] + (Cfg::kOp == kLayerNorm ? b[e] : 0.0f);
      }
    }

#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const int vec = it * kGroup + lane_in_group;
      if (live && vec < kPartVecs)
        store_vec<Cfg::kOut, kVec>(static_cast<typename Out::raw*>(p.y) + base + vec * kVec, v[it]);
    }
  }
};

}  // namespace gf

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
//
// The parts: row.cuh (the shape and row I/O), elem.cuh, reduce.cuh (over lanes, warps and the
// cluster), one header per op (softmax.cuh, rmsnorm.cuh, layernorm.cuh), and the data paths
// (resident.cuh, streaming.cuh, bulk.cuh); this file picks the op and the path and sets up the
// reductions. The instantiating source (backends/rowop/native/codegen.cpp) defines Cfg.
#include "ptx/mbarrier.cuh"
#include "ptx/sync.cuh"
#include "rowops/bulk.cuh"
#include "rowops/layernorm.cuh"
#include "rowops/reduce.cuh"
#include "rowops/resident.cuh"
#include "rowops/rmsnorm.cuh"
#include "rowops/softmax.cuh"
#include "rowops/streaming.cuh"

namespace gf {

template <class Cfg>
struct RowOp : Row<Cfg> {
  using R = Row<Cfg>;
  using R::kCluster, R::kGroup, R::kRowsPerCta, R::global_affine, R::part_base;
  using In = typename R::In;
  // The op's own statistics and outputs.
  using Op = typename Select<Cfg::kOp == RowOpKind::softmax, Softmax<Cfg>,
                             typename Select<Cfg::kOp == RowOpKind::rmsnorm, RmsNorm<Cfg>, LayerNorm<Cfg>>::type>::type;

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
    __shared__ float2 scratch[2][Reduce<Cfg>::kScratch];
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
      v = Reduce<Cfg>::reduce_cta(v, scratch[set], group, lane_in_group);
      if (kCluster == 1) return v;
      if (n == 0) ptx::cluster_wait();  // every CTA's barriers are initialised
      return Reduce<Cfg>::push_cluster(v, cluster_slots[set], &cluster_bar[set], parity, part);
    };

    using InRaw = typename In::raw;
    auto nothing = [](float) {};
    if constexpr (Cfg::kBulk)
      Bulk<Cfg, Op>::all_rows(p, reduce_row, lane_in_group, part);
    else if constexpr (Cfg::kStream)
      Streaming<Cfg, Op>::one_row(p, reduce_row, lane_in_group, part, base, row, static_cast<const InRaw*>(p.x) + base,
                                  static_cast<const InRaw*>(p.residual) + base, global_affine(p, part));
    else
      Resident<Cfg, Op>::one_row(p, reduce_row, nothing, lane_in_group, part, live, base, row,
                                 static_cast<const InRaw*>(p.x) + base, static_cast<const InRaw*>(p.residual) + base,
                                 global_affine(p, part));
  }
};

}  // namespace gf

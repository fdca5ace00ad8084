#pragma once
// The persistent path: each cluster takes rows c, c + stride, ...; thread 0 keeps the next
// kStages parts of x (and of the residual) in flight into a ring of shared-memory stages by bulk
// copies, and the rows are worked on from there, in registers (Resident) or by both streaming
// passes (Streaming).
#include "ptx/mbarrier.cuh"
#include "ptx/sync.cuh"
#include "ptx/tma.cuh"
#include "rowops/resident.cuh"
#include "rowops/streaming.cuh"

namespace gf {

template <class Cfg, class Op>
struct Bulk : Row<Cfg> {
  using R = Row<Cfg>;
  using R::kAffineBytes, R::kCluster, R::kPartBytes, R::kPartCols, R::kStageBytes, R::kThreads, R::global_affine,
      R::part_base;
  using In = typename R::In;
  using Affine = typename R::Affine;

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
  static __device__ __forceinline__ void all_rows(const RowParams& p, ReduceRow reduce_row, int lane_in_group,
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
      for (int off = 0; off < kPartBytes; off += kRowBulkChunk) {
        const u32 bytes = u32(min(kRowBulkChunk, kPartBytes - off));
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
        if (Cfg::kOp == RowOpKind::layernorm)
          copy_part(affine_smem + kPartBytes, from_global.b, &full[Cfg::kStages], false);
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
        Streaming<Cfg, Op>::one_row(p, reduce_row, lane_in_group, part, part_base(row, part), row, x, x + kPartCols,
                                    affine);
        // The residual sums each thread wrote into the stage, ordered before the copy over them.
        if (Cfg::kOp == RowOpKind::rmsnorm && Cfg::kResidual) ptx::fence_proxy_async_smem();
        __syncthreads();  // every thread is done with the stage (its last reads fed the stores)
        refill();
      } else {
        // The row is in registers once read: the stage refills while it is reduced and written.
        auto read = [&](float w) {
          // Waits for w, so for every value read from the stage. The predicate is taken from w's
          // bits through an opaque move: a compiler that proves w is never NaN cannot drop it.
          __syncthreads_or(ptx::opaque_bits(w) == 1u);
          refill();
        };
        Resident<Cfg, Op>::one_row(p, reduce_row, read, lane_in_group, part, true, part_base(row, part), row, x,
                                   x + kPartCols, affine);
      }
      hand_back();
    }
  }
};

}  // namespace gf

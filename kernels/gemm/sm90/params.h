#pragma once
// What the host and the Hopper GEMM kernel share, compiled by both: the kernel's parameters and
// the size of its shared memory. Plain C++.
#include "common/types.h"

namespace gf {

// Every k-block of the mainloop is one 128-byte swizzle row deep: 64 16-bit or 128 fp8 elements.
inline constexpr int kGemmRowBytes = 128;

struct GemmParams {
  TmaDesc a;       // A: {K, M, batch}, box {BK, BM, 1} (BK: a k-block's elements)
  TmaDesc b;       // TN: {K, N, batch}, box {BK, BN (BN/2 when gated split), 1}; NN: {N, K, batch}, box {64, 64, 1}
  TmaDesc d;       // TMA-store epilogue: {out_cols, M, batch}, box {64, rows per consumer, 1}
  TmaDesc c_tile;  // TMA-store epilogue with C: as d
  TmaDesc sfa;     // block scales: A's as one run of fp32 {k_blocks * M}, box {gemm_scale_box(BM)}
  void* out;
  const void* c;
  const void* bias;
  const float* scale_a;  // fp8 scales (GemmArgs)
  const float* scale_b;
  const float* scale_d;  // an fp8 D's scale
  float* partials;  // split-K: one fp32 tile per work unit
  int* counters;    // split-K: arrivals per tile, zero between launches
  int m, n, k, batch;
  int out_cols;  // N, or N/2 when gated
  int tiles_m, tiles_n;
  float alpha, beta;
  int pairs_aligned;  // D rows hold whole 2-element pairs at aligned addresses
  int pdl;            // launched early (programmatic dependent launch): prefetch the weights
  int pdl_trigger;     // when the stream's next kernel may launch: a kPdl* below
};

// When a kernel lets the stream's next kernel launch (programmatic dependent launch), as
// gemmforge's PdlTrigger: once the producer has issued its last load, right after this kernel's
// own dependency wait, or at exit.
enum : int { kPdlAfterLoads = 0, kPdlAtStart = 1, kPdlAtExit = 2 };

// The TMA-store epilogue's staging: store_boxes 64-column boxes (128 bytes a row) of each
// consumer's rows of the tile.
constexpr unsigned gemm_staging_bytes(int consumers, int rows_per_consumer, int store_boxes) {
  return unsigned(consumers * store_boxes * rows_per_consumer * 128);
}

// A stage's block scales of A (scale_rows = BM; 0: none): the tile's rows of the k-block, from
// the 16-byte boundary at or below the first row's (a TMA box must start on one: M need not be a
// multiple of 4), in gemm_scale_loads boxes of gemm_scale_box fp32 (at most 256, 128-byte multiples
// in shared memory) that cover BM + 3.
constexpr int gemm_scale_loads(int scale_rows) { return scale_rows > 128 ? 2 : 1; }
constexpr int gemm_scale_box(int scale_rows) { return scale_rows / gemm_scale_loads(scale_rows) + 32; }
constexpr unsigned gemm_stage_scale_bytes(int scale_rows) {
  return scale_rows ? unsigned(gemm_scale_loads(scale_rows) * gemm_scale_box(scale_rows) * 4) : 0;
}

// Dynamic shared memory of one CTA, in this order: up to 1 KiB to align the stages to 1024 bytes
// (128-byte swizzled tiles need it), the stages of A and of B, the staging boxes, each stage's
// block scales of A (scale_rows fp32), the full and empty barriers of each stage, two C barriers,
// and the split-K flags.
constexpr unsigned gemm_smem_bytes(int bm, int bn, int stages, unsigned staging_bytes, int scale_rows) {
  return 1024 + unsigned(stages * (bm + bn) * kGemmRowBytes) + staging_bytes +
         unsigned(stages) * gemm_stage_scale_bytes(scale_rows) + 2 * stages * 8 + 2 * 8 + 16;
}

}  // namespace gf

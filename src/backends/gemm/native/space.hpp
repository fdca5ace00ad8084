#pragma once
// A native kernel's template parameters, their legality, and the search space over them.
// Plain data and arithmetic: no CUDA calls, so all of it is tested on the CPU.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gemm/sm90/params.h"
#include "gemmforge/backend.hpp"

namespace gf::native {

struct NativeConfig {
  int bm = 128, bn = 256;  // tile; BK is 128 bytes of K (64 16-bit or 128 fp8 elements)
  int stages = 4;          // shared-memory pipeline depth
  int consumers = 2;       // consumer warpgroups
  bool pingpong = false;   // consumers take alternate tiles (else both share each tile)
  int split_k = 1;         // K-slices per tile, reduced by the last slice to finish
  // CTAs per cluster, sharing operands by TMA multicast: 1, a pair (2) or a 2x2 quad (4), whose
  // tiles along M share B and along N share A.
  int cluster = 1;
  bool cluster_m = false;  // a pair stacks along M and shares B (else along N, sharing A)
  int group = 8;           // tiles swept together in the grouped raster order
  bool raster_n = false;   // group along N instead of M
  // The epilogue through shared memory and a TMA store, staging this many 64-column boxes per
  // consumer at a time (a whole tile row has bn/64); 0 stores from registers directly.
  int store_boxes = 0;
  // fp8: each k-block's products are added to fp32 accumulators of their own (what block scales
  // need; for the others the more exact of two candidates, as cuBLASLt's fast-accumulation off).
  bool promote = false;
  // Promotion with a second set of partial accumulators: each k-block's wgmma are issued before
  // the previous k-block's products are promoted, so the two overlap.
  bool promote_ahead = false;
  // Promotion by column halves: each k-block's wgmma run as two groups, the tile's left and right
  // halves, into sets of half the width, and each half's products are promoted while the other
  // half's wgmma run. The overlap of promotion ahead at two thirds of its registers: 192-wide tiles
  // have room for it.
  bool halves = false;
  // Swap-AB, for small M: the kernel runs D^T = B A^T, so the weights fill wgmma's 64-row M side
  // and the problem's few rows its N side (bn of 16..128), and stores D transposed from registers.
  // bm, bn and every other field describe that kernel (kernel_problem), not the problem.
  bool swap_ab = false;

  int threads() const { return 128 * (1 + consumers); }
  int pair_m() const { return cluster == 4 || (cluster == 2 && cluster_m) ? 2 : 1; }
  int pair_n() const { return cluster == 4 || (cluster == 2 && !cluster_m) ? 2 : 1; }
  int wg_rows() const { return pingpong ? bm : bm / consumers; }
  // The fp32 accumulators of a consumer thread's output (64 rows x bn a warpgroup's wgmma step),
  // what the epilogue holds; promotion keeps one or two more sets of them in the main loop.
  int out_acc_per_thread() const { return (wg_rows() / 64) * (bn / 2); }
  int acc_per_thread() const { return out_acc_per_thread() * (promote_ahead ? 3 : promote ? 2 : 1); }
  // Two consumers raise their register budget to 232 (setmaxnreg); a lone one keeps what the
  // launch gives it.
  int max_acc_per_thread() const { return consumers == 2 ? 192 : 128; }
  bool store_tma() const { return store_boxes > 0; }
  // The kernel's own layout (kernels/gemm/sm90/params.h).
  int staging_bytes() const { return int(gemm_staging_bytes(consumers, wg_rows(), store_boxes)); }
  // Block scales add a stage's scales of A's rows to each stage.
  int smem_bytes(const GemmProblem& p) const {
    const int scale_rows = p.epilogue.scale == ScaleKind::block128 ? bm : 0;
    return int(gemm_smem_bytes(bm, bn, stages, unsigned(staging_bytes()), scale_rows));
  }
  // Every parameter in a fixed order: the candidate's name and identity.
  std::string name(const GemmProblem& p) const;
  nlohmann::json to_json() const;
  static NativeConfig from_json(const nlohmann::json& j);
  bool operator==(const NativeConfig&) const = default;
};

// Swap-AB variants are offered up to this many rows: the kernel's N then holds them all in one
// tile of at most 128 columns (wgmma n16..n128; the held-out M = 77 takes n80).
inline constexpr int64_t kSwapMaxM = 128;
// Up to this many rows the weights stream from DRAM (the cost model's small-M regime), and
// pipelines deeper than 8 stages are offered.
inline constexpr int64_t kDeepPipelineMaxM = 256;
// The problem the kernel of this config runs: the problem itself, or with swap_ab its transpose
// D^T = B A^T (M and N, A's and B's dtypes, row and column bias exchanged).
GemmProblem kernel_problem(const NativeConfig& c, const GemmProblem& p);
// Why the native templates cannot run a problem at all, or "".
std::string unsupported_reason(const GemmProblem& p);
// Why this config cannot run the problem on the device, or "".
std::string illegal_reason(const NativeConfig& c, const GemmProblem& p, const DeviceInfo& d);
// Elements of K per k-block: one 128-byte row (64 16-bit or 128 fp8 elements).
inline int block_k(const GemmProblem& p) { return kGemmRowBytes / int(dtype_bytes(p.a)); }
// D columns of a tile BN wide: half of them with a SwiGLU gate.
inline int tile_out_cols(int bn, const GemmProblem& p) { return p.epilogue.gate == GateKind::none ? bn : bn / 2; }
// The TMA-store epilogue's 64-column boxes over a tile's D columns (the last one may overlap).
inline int tile_out_boxes(int bn, const GemmProblem& p) { return (tile_out_cols(bn, p) + 63) / 64; }
// Modelled run time in microseconds, to rank candidates before anything is compiled
// (cost_model.cpp): the larger of the tensor-core time (tile efficiency, wave quantisation) and the
// memory time.
double estimate_us(const NativeConfig& c, const GemmProblem& p, const DeviceInfo& d);
// The legal configs, best estimate first, cut to the search level (fast 8, default 30, all).
std::vector<NativeConfig> ranked_configs(const GemmProblem& p, const DeviceInfo& d, Search level);

}  // namespace gf::native

#include "backends/gemm/cute/space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/arith.hpp"
#include "core/ranking.hpp"

namespace gf::cute_backend {
namespace {

// Consumer warpgroups that multiply one tile (gemm_sm90.py's Sm90Gemm.warpgroups): block scales
// hold each k-block's products beside the accumulators, so two share a 128-row tile.
int warpgroups(const CuteConfig& c, const GemmProblem& p) {
  const bool block = p.epilogue.scale == ScaleKind::block128;
  return c.tile_m == 256 || (c.tile_m == 128 && !c.pingpong && (c.tile_n > 128 || block)) ? 2 : 1;
}

// The ranking model's constants, one a line with its reason.
struct Model {
  // Peak dense 16-bit tensor-core rate of the GPU (H100/H200 SXM); fp8 runs at twice it.
  static constexpr double kPeak = 989e12;
  // A tile's operand intensity tile_m*tile_n/(tile_m+tile_n) at which it reaches half the peak.
  static constexpr double kHalfPeakIntensity = 24.0;
  // One warpgroup keeps fewer wgmma in flight than two (measured 128x128 vs 128x256, 2026-12-02).
  // Ping-pong's too, though its two warpgroups take turns: in the tuner's race at 4096 and 8192
  // tokens its 128x128 tile came within 1-4% of cooperative 128x256, but back to back (bench) it
  // ran 5-17% slower: under the H200's power cap it clocks lower (1200 against 1425 MHz,
  // 2026-12-04 20:16 UTC). The share stays until a layer's benchmark says which to believe.
  static constexpr double kOneWarpgroupShare = 0.75;
  // Multicast halves a cluster's L2 reads of the shared operand: a small gain when tiles are many.
  static constexpr double kClusterGain = 0.97;
  // DRAM an H200 achieves for a GEMM's operands, with a CTA on every SM; fewer CTAs pull a
  // proportional share (down at M = 16 in 32 CTAs: 1.1 TB/s measured, 2026-12-03).
  static constexpr double kDramBytesPerSecond = 3.3e12;
  // The persistent schedule over several waves: the next tile's loads overlap this tile's
  // epilogue, and no CTA launches twice. Unfitted (its first GPU run is pending): a guess from
  // the plain template's 0.84 of cuBLASLt at M = 4096 against CUTLASS's persistent kernels' 0.96.
  static constexpr double kPersistentGain = 0.9;
  // Ping-pong: each warpgroup's epilogue runs under the other's multiplies. Unfitted (no GPU run
  // yet): a small gain over the cooperative schedule, so it is tried without crowding it out.
  static constexpr double kPingpongGain = 0.95;
  // 256-row tiles (two warpgroups, 128 rows each in two M steps) move a quarter fewer operand bytes a flop than
  // 128 x 256, which under the power cap buys clock (native's 256-row tiles lead at 8192 tokens).
  // Not yet raced: they rank just behind the measured tiles until a race places them.
  static constexpr double kUnmeasuredTall = 1.04;
  // Split-K's sums: each slice adds its tile into the workspace, the last reads it back.
  static constexpr double kSplitBytesPerSecond = 2.0e12;

  // Small M (at most kSmallM rows): the weights stream from DRAM and the tensor cores mostly wait.
  // Fitted on every bf16 kernel of llama3-8b's GEMMs at 16 and 128 tokens in one race (H200,
  // 2026-12-04 17:02 UTC): the fast list's best went from 0.87 to 0.97 of cuBLASLt's there.
  static constexpr int64_t kSmallM = 128;
  // The weights' stream: DRAM at this rate with every SM's share pulled; a grid that leaves SMs
  // idle, in one wave or its last, pulls it at the square root of its busy share.
  static constexpr double kStreamBytesPerSecond = 3.0e12;
  // A weight tile read again (swap-AB's token tiles, or M tiles without a pair along M sharing
  // B) mostly comes from L2: this share of a DRAM read.
  static constexpr double kRereadShare = 0.3;
  // Each k-block of a CTA's chain costs this much at least: the one-CTA-a-tile kernel refills a
  // stage only after the wgmma that read it, the persistent ones from a producer warp of their own.
  static constexpr double kChainS = 0.3e-6, kChainPersistentS = 0.2e-6;
  // A split-K launch: the slices' counters and the last slice's wait, and its partials at half
  // the large-M rate (their round trips are exposed when little else runs).
  static constexpr double kSplitS = 1e-6, kSmallSplitBytesPerSecond = 1e12;
  // The three bounds rarely bind alone: a tenth of their sum rides on the longest, which also
  // orders the many configs the weights' stream alone would tie.
  static constexpr double kBoundsShare = 0.1;
};

// Small M: the longest of the weights' stream, the CTAs' k-block chains and the tensor-core
// time, plus split-K's sums; ctas and waves are the grid's (modeled_seconds).
double small_m_seconds(const CuteConfig& c, const GemmProblem& p, int sms, double ctas, double waves,
                       double compute_s) {
  const double busy = ctas / (waves * sms);
  const double weights = double(p.n) * p.k * dtype_bytes(p.b);
  const int64_t reads = c.swap_ab ? ceil_div(p.m, c.tile_n) : ceil_div(ceil_div(p.m, c.tile_m), c.cluster_m);
  const double stream_s =
      weights * (1 + Model::kRereadShare * double(reads - 1)) / (Model::kStreamBytesPerSecond * std::sqrt(busy));
  const double chain_s = waves * double(ceil_div(ceil_div(p.k, is_fp8(p.a) ? 128 : 64), c.split_k)) *
                         (c.persistent ? Model::kChainPersistentS : Model::kChainS);
  double s = std::max({stream_s, chain_s, compute_s}) + Model::kBoundsShare * (stream_s + chain_s + compute_s);
  if (c.split_k > 1)
    s += Model::kSplitS +
         double(split_workspace(c, p).partials_bytes) * (c.split_k + 1) / Model::kSmallSplitBytesPerSecond;
  // No persistent gain here: what it buys at large M (the next tile's loads under this tile's
  // epilogue) is not what bounds a weights' stream. Without it the fast list's best, in the races
  // of every kernel (2026-12-04), went 0.963 -> 1.002 of cuBLASLt at 16 tokens and 0.970 -> 0.971
  // at 128 (llama3-8b), 0.823 -> 0.842 at 77 (qwen2.5-7b, phi3-mini: held out).
  return s;
}

// The model's time for config c on problem p (the kernel computes kernel_problem(c, p)).
double modeled_seconds(const CuteConfig& c, const GemmProblem& p, int sms) {
  const GemmProblem q = kernel_problem(c, p);
  const double peak = Model::kPeak * (is_fp8(q.a) ? 2 : 1);
  const int tm = c.tile_m, tn = c.tile_n, cm = c.cluster_m, cn = c.cluster_n, split = c.split_k;
  const int64_t tiles_m = ceil_div(ceil_div(q.m, tm), cm) * cm;
  const int64_t tiles_n = ceil_div(ceil_div(q.n, tn), cn) * cn;
  const double intensity = double(tm) * tn / (tm + tn);
  double rate = peak / sms * intensity / (intensity + Model::kHalfPeakIntensity);
  if (warpgroups(c, q) == 1) rate *= Model::kOneWarpgroupShare;
  const double ctas = double(tiles_m * tiles_n * split);
  // The CTAs that pull operands from DRAM: a cluster's padding past M or N loads nothing of its
  // own (TMA zero-fills, or the multicast brings its peer's tile).
  const double loading = double(ceil_div(q.m, tm) * ceil_div(q.n, tn) * split);
  const double waves = std::ceil(ctas / sms), busy = std::min(1.0, loading / sms);
  const double compute_s = waves * 2.0 * tm * tn * q.k / split / rate * (tm == 256 ? Model::kUnmeasuredTall : 1.0);
  if (p.m <= Model::kSmallM) return small_m_seconds(c, p, sms, ctas, waves, compute_s);
  double s = std::max(compute_s, q.min_bytes() / (Model::kDramBytesPerSecond * busy));
  if (cm * cn > 1) s *= tiles_m * tiles_n >= 2 * sms ? Model::kClusterGain : 1.0 / Model::kClusterGain;
  if (c.persistent && waves > 1) s *= Model::kPersistentGain;
  if (c.pingpong && waves > 1) s *= Model::kPingpongGain;
  if (split > 1) s += double(split_workspace(c, p).partials_bytes) * (split + 1) / Model::kSplitBytesPerSecond;
  return s;
}

}  // namespace

std::string CuteConfig::name() const {
  return fmt::format("wgmma_{}x{}_c{}x{}{}{}{}", tile_m, tile_n, cluster_m, cluster_n,
                     pingpong     ? "_pp"
                     : persistent ? "_ws"
                                  : "",
                     split_k > 1 ? fmt::format("_k{}", split_k) : "", swap_ab ? "_swap" : "");
}

nlohmann::json CuteConfig::to_json() const {
  nlohmann::json j = {{"tile_m", tile_m},       {"tile_n", tile_n},         {"cluster_m", cluster_m},
                      {"cluster_n", cluster_n}, {"persistent", persistent}, {"split_k", split_k},
                      {"pingpong", pingpong}};
  if (swap_ab) j["swap_ab"] = true;  // absent otherwise: stored decisions of before keep their keys
  return j;
}

CuteConfig CuteConfig::from_json(const nlohmann::json& j) {
  return {.tile_m = j.at("tile_m"),
          .tile_n = j.at("tile_n"),
          .cluster_m = j.at("cluster_m"),
          .cluster_n = j.at("cluster_n"),
          .persistent = j.value("persistent", false),
          .split_k = j.value("split_k", 1),
          .pingpong = j.value("pingpong", false),
          .swap_ab = j.value("swap_ab", false)};
}

std::string unsupported_reason(const GemmProblem& p) {
  if (p.batch != 1) return "batched GEMMs are not in the CuTe DSL template";
  // The gate's up rows come through a second descriptor over B's rows: K-major B only.
  if (p.epilogue.gate != GateKind::none) {
    if (p.layout != Layout::tn) return "the CuTe DSL SwiGLU reads B K-major (tn)";
    if (p.n % 16 != 0) return "TMA needs 16-byte row pitches: a gated D's N / 2 a multiple of 8";
  }
  if (is_fp8(p.a) != is_fp8(p.b)) return "the CuTe DSL template takes two 16-bit or two fp8 operands";
  if (is_fp8(p.a)) {
    if (p.layout != Layout::tn) return "fp8 wgmma reads both operands K-major (layout tn)";
    if (p.out != DType::bf16 && p.out != DType::f16) return "the CuTe DSL template's fp8 GEMMs write bf16 or f16";
    if (p.k % 16 != 0 || p.n % 8 != 0) return "TMA needs 16-byte row pitches (K % 16 == 0 and N % 8 == 0)";
    return "";
  }
  if (p.a != DType::bf16 && p.a != DType::f16) return "the CuTe DSL template takes bf16, f16 and fp8 inputs";
  if (p.b != p.a || p.out != p.a) return "the CuTe DSL template's 16-bit GEMMs read and write one dtype";
  if (p.k % 8 != 0 || p.n % 8 != 0) return "TMA needs 16-byte row pitches (K and N multiples of 8)";
  return "";
}

std::string illegal_reason(const CuteConfig& c, const GemmProblem& p) {
  const Epilogue& e = p.epilogue;
  if (c.split_k < 1) return "split_k must be >= 1";
  // The persistent grid is a cluster for every cluster's worth of SMs. Pairs fill the GPU (66 on
  // 132 SMs at one CTA an SM), clusters of four do not: 30 fit at once, on 120 SMs, so the grid's
  // last three would wait a whole pass (cudaOccupancyMaxActiveClusters, H200, 2026-11-30).
  if (c.cluster_m < 1 || c.cluster_n < 1 || c.cluster_m * c.cluster_n > 2)
    return "a cluster is one or two CTAs: four at one CTA an SM leave 12 of 132 SMs idle";
  if (c.split_k > 1 && (c.persistent || c.cluster_m * c.cluster_n > 1))
    return "split-K is for the one-CTA-a-tile schedule without clusters";
  if (c.swap_ab) {
    if (p.layout != Layout::tn || e.gate != GateKind::none) return "swap-AB takes K-major operands and no gate";
    if (c.persistent || c.cluster_m * c.cluster_n > 1) return "swap-AB is for the one-CTA-a-tile schedule";
    if ((c.tile_n != 16 && c.tile_n % 32 != 0) || c.tile_n > 128) return "swap-AB's token tile is 16 or 32..128 wide";
  } else if (c.tile_n < 64) {
    return "tiles narrower than 64 are swap-AB's";
  }
  if (c.pingpong && !c.persistent) return "ping-pong is a persistent schedule";
  // Two warpgroups, 128 rows each.
  if (c.tile_m == 256) {
    if (!c.persistent || c.pingpong || c.swap_ab) return "256-row tiles are for the cooperative persistent schedule";
    // 192 accumulators a thread at most; at 64 wide ptxas ignores the register reallocation (C7508).
    if (c.tile_n < 128 || c.tile_n > 192) return "a 256-row tile is 128 to 192 wide";
    // The DSL's ptxas -v (2026-12-07): 16-516 bytes of spills at 256x192 with rowwise scales beside
    // a bias, C or GELU; none with a gate alone (since its halved reciprocals), erf GELU, per-tensor
    // scales.
    if (e.scale == ScaleKind::rowcol && c.tile_n > 128 &&
        (e.bias != BiasKind::none || e.has_c() || e.act != Activation::none))
      return "a 256-row tile wider than 128 spills with rowwise scales beside a bias, C or an activation";
  }
  // Block scales: each k-block's products come into registers of their own beside the
  // accumulators, then are scaled into them. A warpgroup holds at most 64 x 128 of each, and a
  // tile's columns lie in one of B's 128-row scale blocks (a split gate's up half too: N/2 a
  // multiple of the half).
  if (e.scale == ScaleKind::block128) {
    if (c.swap_ab) return "block scales are per row of A and per 128-row block of B: no swap-AB";
    if (c.tile_m > 128 || (c.tile_n != 64 && c.tile_n != 128))
      return "block scales take 64- or 128-row tiles 64 or 128 wide";
    if (e.gate == GateKind::split && (p.n / 2) % (c.tile_n / 2) != 0)
      return "a split gate's up rows would straddle B's 128-row scale blocks (N/2 not a multiple of half the tile)";
    if (c.pingpong && c.tile_m != 64) return "a block-scaled ping-pong warpgroup holds a 64-row tile";
  }
  // A ping-pong warpgroup holds its whole tile's accumulators (232 registers a thread).
  if (c.pingpong && c.tile_m * c.tile_n > 128 * 128) return "a ping-pong warpgroup holds at most a 128 x 128 tile";
  return "";
}

GemmProblem kernel_problem(const CuteConfig& c, const GemmProblem& p) {
  if (!c.swap_ab) return p;
  GemmProblem q = p;
  std::swap(q.m, q.n);
  std::swap(q.a, q.b);
  if (q.epilogue.bias != BiasKind::none)
    q.epilogue.bias = q.epilogue.bias == BiasKind::col ? BiasKind::row : BiasKind::col;
  return q;
}

SplitWorkspace split_workspace(const CuteConfig& c, const GemmProblem& p) {
  if (c.split_k <= 1) return {};
  const GemmProblem q = kernel_problem(c, p);
  const int64_t tiles_m = ceil_div(q.m, c.tile_m), tiles_n = ceil_div(q.n, c.tile_n);
  // Each part in whole 256-byte lines, so the counters after the partials stay aligned.
  return {.partials_bytes = size_t(ceil_div(tiles_m * c.tile_m * tiles_n * c.tile_n * 4, 256) * 256),
          .counters_bytes = size_t(ceil_div(tiles_m * tiles_n * 4, 256) * 256)};
}

std::vector<CuteConfig> ranked_configs(const GemmProblem& p, const DeviceInfo& d, Search level) {
  const int sms = std::max(d.sm_count, 1);
  const int64_t k_blocks = ceil_div(p.k, is_fp8(p.a) ? 128 : 64);
  std::vector<std::pair<double, CuteConfig>> scored;
  auto consider = [&](const CuteConfig& c) {
    if (!illegal_reason(c, p).empty()) return;
    const GemmProblem q = kernel_problem(c, p);
    const int64_t tiles = ceil_div(ceil_div(q.m, c.tile_m), c.cluster_m) * c.cluster_m *
                          ceil_div(ceil_div(q.n, c.tile_n), c.cluster_n) * c.cluster_n;
    // Split-K only where whole tiles leave most SMs idle, and each slice has k-blocks.
    if (c.split_k > 1 && (tiles * 2 > sms || c.split_k > k_blocks)) return;
    scored.emplace_back(modeled_seconds(c, p, sms), c);
  };
  for (auto [persistent, pingpong] : {std::pair{false, false}, {true, false}, {true, true}})
    for (int tm : {64, 128, 256})
      for (int tn : {64, 128, 192, 256})
        for (auto [cm, cn] : {std::pair{1, 1}, {2, 1}, {1, 2}}) {
          if (tm == 256 && p.m <= 256) continue;  // a tile row that large only pads
          for (int split : {1, 2, 4, 8}) consider({tm, tn, cm, cn, persistent, split, pingpong});
        }
  // Swap-AB where the tokens are few: the weights fill wgmma's 64 rows, the tokens an n16..n128
  // tile. Up to 64 tokens the narrow tiles; past 64, one token tile (n96 or n128) that holds them
  // all, since narrower ones would stream the weights once each.
  if (p.m <= Model::kSmallM)
    for (int tm : {64, 128})
      for (int tn : {16, 32, 64, 96, 128})
        if (p.m <= 64 ? tn <= 64 : tn >= p.m)
          for (int split : {1, 2, 4, 8}) consider({.tile_m = tm, .tile_n = tn, .split_k = split, .swap_ab = true});
  auto tier = [](const CuteConfig& c) {
    return fmt::format("{}x{}{}{}", c.tile_m, c.tile_n, c.persistent, c.pingpong);
  };
  // The short list at small M holds one more: kernels there stand closer together.
  const size_t fast_keep = p.m <= Model::kSmallM ? 4 : 3;
  const size_t keep = level == Search::exhaustive ? scored.size() : level == Search::fast ? fast_keep : 8;
  std::vector<CuteConfig> head = diverse_head<CuteConfig>(scored, keep, {tier});
  // Ping-pong runs one warpgroup's epilogue under the other's multiplies. The model prices no
  // epilogue, and a transcendental an element costs a cooperative kernel 14-19% at 128 and 4096
  // tokens (erf GELU and SwiGLU, fp8 rowwise, 2026-12-04): the best ping-pong kernel is raced too,
  // where an SM has two tiles at least to overlap.
  if (level != Search::exhaustive && p.epilogue.has_transcendental())
    add_best_of(
        head, scored, [](const CuteConfig& c) { return c.pingpong; },
        [&](const CuteConfig& c) { return c.pingpong && ceil_div(p.m, c.tile_m) * ceil_div(p.n, c.tile_n) >= 2 * sms; },
        fast_keep);
  return head;
}

nlohmann::json compile_request(const CuteConfig& c, const GemmProblem& p) {
  const GemmProblem q = kernel_problem(c, p);  // swap-AB: its operands, bias and scales exchanged
  const Epilogue& e = q.epilogue;
  return {{"op", "compile"},
          {"dtype", to_string(q.a)},
          {"dtype_b", to_string(q.b)},
          {"out", to_string(p.out)},
          {"layout", to_string(p.layout)},
          {"tile_m", c.tile_m},
          {"tile_n", c.tile_n},
          {"cluster_m", c.cluster_m},
          {"cluster_n", c.cluster_n},
          {"persistent", c.persistent},
          {"split_k", c.split_k},
          {"pingpong", c.pingpong},
          {"act", to_string(e.act)},
          {"bias", to_string(e.bias)},
          {"residual", e.has_c()},
          {"scale", to_string(e.scale)},
          {"gate", to_string(e.gate)},
          {"swap_ab", c.swap_ab}};
}

}  // namespace gf::cute_backend

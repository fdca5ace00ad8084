#include "backends/gemm/cutlass/space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/arith.hpp"
#include "core/codes.hpp"
#include "gemmforge/error.hpp"

namespace gf::cutlass_backend {
namespace {

using S = Schedule;
// The catalogue of 16-bit kernels, one unit a tier, each tier in the order its kernels are listed
// in the unit. Tier 0 (--search fast) covers the llama-like shapes with four kernels: the big
// cooperative tile for large M, ping-pong for mid sizes, a 64-row ping-pong for few tokens and
// stream-K for problems of fewer tiles than SMs. Tiers 1 and 2 add the neighbours CUTLASS's
// profiler lists for SM90 bf16. fp8 units take the same tiles with K tiles of 128 (one 128-byte
// swizzle row either way).
const std::vector<std::vector<TileConfig>>& catalogue() {
  static const std::vector<std::vector<TileConfig>> tiers = {
      {{128, 256, 64, 2, 1, S::cooperative},
       {128, 128, 64, 2, 1, S::pingpong},
       {64, 128, 64, 1, 1, S::pingpong},
       {128, 128, 64, 1, 1, S::streamk}},
      {{256, 128, 64, 1, 2, S::cooperative},
       {128, 128, 64, 1, 1, S::cooperative},
       {64, 256, 64, 1, 1, S::pingpong},
       {128, 256, 64, 2, 1, S::streamk}},
      {{128, 128, 64, 2, 1, S::cooperative},
       {128, 128, 64, 1, 2, S::cooperative},
       {256, 128, 64, 2, 1, S::cooperative},
       {128, 256, 64, 1, 2, S::cooperative},
       {128, 128, 64, 1, 1, S::pingpong},
       {128, 128, 64, 1, 2, S::pingpong},
       {64, 128, 64, 2, 1, S::pingpong},
       {128, 128, 64, 2, 1, S::streamk}},
  };
  return tiers;
}

// The swizzles CUTLASS's persistent scheduler takes (tiles a raster group).
constexpr int kSwizzles[] = {1, 2, 4, 8};

// The tile orders a level tries for each kernel: a run-time choice, so they cost timing, not
// compiles. Fast keeps CUTLASS's defaults.
std::vector<std::pair<Raster, int>> orders_of(Search level) {
  if (level == Search::fast) return {{Raster::heuristic, 1}};
  if (level == Search::normal) return {{Raster::heuristic, 1}, {Raster::heuristic, 4}};
  std::vector<std::pair<Raster, int>> out;
  for (Raster r : {Raster::heuristic, Raster::along_m, Raster::along_n})
    for (int swizzle : kSwizzles) out.push_back({r, swizzle});
  return out;
}

constexpr const char* kRasterNames[] = {"heuristic", "m", "n"};

int tiers_of(Search level) {
  switch (level) {
    case Search::fast:
      return 1;
    case Search::normal:
      return 2;
    case Search::exhaustive:
      return int(catalogue().size());
  }
  return 1;
}

// The ranking model's constants, one a line with its reason.
struct Model {
  // Peak dense 16-bit tensor-core rate of an H100/H200 SXM; fp8 runs at twice it.
  static constexpr double kPeak = 989e12;
  // DRAM an H200 achieves for a GEMM's operands.
  static constexpr double kDramBytesPerSecond = 3.3e12;
  // A tile's operand intensity M*N/(M+N) at which it reaches half the peak (64x128: 43, 128x256: 85).
  static constexpr double kHalfPeakIntensity = 12.0;
  // Ping-pong overlaps one warpgroup's epilogue with the other's mainloop.
  static constexpr double kPingpongShare = 0.95;
  // A cluster pair multicasts an operand: less L2 traffic a tile.
  static constexpr double kClusterShare = 0.97;
  // Stream-K's fix-up of partial tiles through the workspace, and the memset that re-arms it.
  static constexpr double kStreamKOverheadUs = 3.0;
  // Launch and the prologue of a persistent kernel.
  static constexpr double kLaunchUs = 3.0;
};

}  // namespace

std::string_view to_string(Schedule s) {
  switch (s) {
    case Schedule::cooperative:
      return "coop";
    case Schedule::pingpong:
      return "pingpong";
    case Schedule::streamk:
      return "streamk";
  }
  return "?";
}

Schedule parse_schedule(std::string_view s) {
  for (Schedule v : {Schedule::cooperative, Schedule::pingpong, Schedule::streamk})
    if (to_string(v) == s) return v;
  GF_FAIL("unknown CUTLASS schedule '{}' (coop, pingpong, streamk)", s);
}

UnitKind UnitKind::of(const GemmProblem& p) {
  return {.in = p.a,
          .in_b = p.b,
          .out = p.out,
          .layout = p.layout,
          .c = p.epilogue.has_c(),
          .bias = p.epilogue.bias,
          .act = p.epilogue.act,
          .scale = p.epilogue.scale};
}

std::string UnitKind::name() const {
  const std::string inputs =
      in_b == in ? std::string(to_string(in)) : fmt::format("{}x{}", to_string(in), to_string(in_b));
  std::string s = fmt::format("{}_{}_{}", inputs, to_string(out), to_string(layout));
  if (c) s += "_c";
  if (bias == BiasKind::col) s += "_bias";
  if (bias == BiasKind::row) s += "_rowbias";
  if (act != Activation::none) s += fmt::format("_{}", to_string(act));
  if (scale == ScaleKind::tensor) s += "_scaled";
  if (scale == ScaleKind::rowcol) s += "_rowwise";
  if (scale == ScaleKind::block128) s += "_block128";
  return s;
}

nlohmann::json UnitKind::to_json() const {
  return {{"in", to_string(in)},
          {"in_b", to_string(in_b)},
          {"out", to_string(out)},
          {"layout", to_string(layout)},
          {"c", c},
          {"bias", to_string(bias)},
          {"act", to_string(act)},
          {"scale", to_string(scale)}};
}

UnitKind UnitKind::from_json(const nlohmann::json& j) {
  auto dtype = [&](const char* field) {
    const auto t = parse_dtype(j.at(field).get<std::string>());
    GF_CHECK(t, "cutlass config: unknown dtype {}", j.at(field).dump());
    return *t;
  };
  const std::string layout = j.at("layout"), act = j.at("act");
  GF_CHECK(layout == "tn" || layout == "nn", "cutlass config: unknown layout {}", layout);
  UnitKind k{
      .in = dtype("in"), .out = dtype("out"), .layout = layout == "tn" ? Layout::tn : Layout::nn, .c = j.at("c")};
  // A boolean: a decision stored before per-row biases (true was a bias per column).
  const auto& bias = j.at("bias");
  if (bias.is_boolean()) {
    k.bias = bias.get<bool>() ? BiasKind::col : BiasKind::none;
  } else {
    const auto b = parse_code<BiasKind>(kBiasKindNames, bias.get<std::string>());
    GF_CHECK(b, "cutlass config: unknown bias kind {}", bias.dump());
    k.bias = *b;
  }
  const std::string scale = j.value("scale", std::string("none"));
  const auto s = parse_code<ScaleKind>(kScaleKindNames, scale);
  GF_CHECK(s, "cutlass config: unknown scale kind {}", scale);
  k.scale = *s;
  k.in_b = j.contains("in_b") ? dtype("in_b") : k.in;
  // The activation's name is the epilogue token of that name (gemmforge/codes.hpp).
  k.act = act == "none" ? Activation::none : parse_epilogue(act).act;
  return k;
}

std::string TileConfig::name() const {
  return fmt::format("{}x{}x{}_c{}x{}_{}", m, n, k, cluster_m, cluster_n, to_string(schedule));
}

nlohmann::json TileConfig::to_json() const {
  return {{"m", m},
          {"n", n},
          {"k", k},
          {"cluster_m", cluster_m},
          {"cluster_n", cluster_n},
          {"schedule", to_string(schedule)}};
}

TileConfig TileConfig::from_json(const nlohmann::json& j) {
  return {.m = j.at("m"),
          .n = j.at("n"),
          .k = j.at("k"),
          .cluster_m = j.at("cluster_m"),
          .cluster_n = j.at("cluster_n"),
          .schedule = parse_schedule(j.at("schedule").get<std::string>())};
}

std::string Unit::name() const { return fmt::format("cutlass90_{}_t{}", kind.name(), tier); }

std::string Unit::instance_name(size_t i) const {
  return fmt::format("cutlass90_{}_{}", kind.name(), tiles.at(i).name());
}

std::string CutlassConfig::name() const {
  if (raster == Raster::heuristic && swizzle == 1) return kernel_name();
  return fmt::format("{}_r{}{}", kernel_name(), kRasterNames[int(raster)][0], swizzle);
}

nlohmann::json CutlassConfig::to_json() const {
  nlohmann::json tiles = nlohmann::json::array();
  for (const auto& t : unit.tiles) tiles.push_back(t.to_json());
  return {{"kind", unit.kind.to_json()},         {"tier", unit.tier}, {"tiles", tiles}, {"index", index},
          {"raster", kRasterNames[int(raster)]}, {"swizzle", swizzle}};
}

CutlassConfig CutlassConfig::from_json(const nlohmann::json& j) {
  try {
    CutlassConfig c;
    c.unit.kind = UnitKind::from_json(j.at("kind"));
    c.unit.tier = j.at("tier");
    for (const auto& t : j.at("tiles")) c.unit.tiles.push_back(TileConfig::from_json(t));
    c.index = j.at("index");
    GF_CHECK(c.index >= 0 && size_t(c.index) < c.unit.tiles.size(), "index {} outside a unit of {}", c.index,
             c.unit.tiles.size());
    // Decisions stored before tile orders were a choice ran with the defaults.
    const auto raster = parse_code<Raster>(kRasterNames, j.value("raster", std::string("heuristic")));
    GF_CHECK(raster, "unknown raster order {}", j.value("raster", std::string()));
    c.raster = *raster;
    c.swizzle = j.value("swizzle", 1);
    GF_CHECK(std::ranges::find(kSwizzles, c.swizzle) != std::end(kSwizzles), "swizzle {} is not 1, 2, 4 or 8",
             c.swizzle);
    return c;
  } catch (const nlohmann::json::exception& e) {
    GF_FAIL("malformed cutlass config {}: {}", j.dump(), e.what());
  }
}

std::string unsupported_reason(const GemmProblem& p) {
  const Epilogue& e = p.epilogue;
  if (e.gate != GateKind::none) return "CUTLASS has no stock SwiGLU fusion (the unfused plan covers it)";
  if (is_fp8(p.a) || is_fp8(p.b)) {
    if (!is_fp8(p.a) || !is_fp8(p.b)) return "the CUTLASS kernels take two fp8 or two 16-bit operands";
    if (e.scale == ScaleKind::rowcol && e.has_c()) return "rowwise fp8 scales with C are not in the CUTLASS backend";
    if (p.out != DType::bf16 && p.out != DType::f16) return "the CUTLASS fp8 kernels write bf16 or f16";
    if (p.k % 16 != 0) return "CUTLASS's TMA needs K a multiple of 16 for fp8";
    if (p.n % 8 != 0) return "CUTLASS's TMA needs N a multiple of 8 (16-byte rows of D)";
    // Its blockwise mainloop loads A's 1x128 scales M-major by TMA: rows of M floats, 16-byte
    // aligned (its can_implement refused M = 77 on the GPU).
    if (e.scale == ScaleKind::block128 && p.m % 4 != 0)
      return "CUTLASS's blockwise mainloop loads A's scales in rows of M floats by TMA: M must be a multiple of 4";
    return "";
  }
  if (p.a != DType::bf16 && p.a != DType::f16) return "the CUTLASS kernels take bf16, f16 or fp8 inputs";
  if (p.out != p.a && p.out != DType::f32) return "the CUTLASS kernels write the input dtype or f32";
  if (e.scale != ScaleKind::none) return "scales are for fp8 inputs";
  // TMA moves 16-byte rows: every contiguous extent a multiple of 16 bytes.
  if (p.k % 8 != 0) return "CUTLASS's TMA needs K a multiple of 8";
  if (p.n * dtype_bytes(p.out) % 16 != 0 || (p.layout == Layout::nn && p.n % 8 != 0))
    return "CUTLASS's TMA needs N a multiple of 8 (16-byte rows of B and D)";
  return "";
}

std::string illegal_reason(const TileConfig& t, DType in, ScaleKind scale) {
  // Block scales: a tile of exactly one 128-column block of B's scales (A's are per row, and the
  // blockwise mainloop cannot take several scales along both M and N: a static assertion), and no
  // stream-K (its fix-up is not the blockwise mainloop's).
  if (scale == ScaleKind::block128 && (t.n != 128 || t.schedule == Schedule::streamk))
    return "block scales need tile N of 128 and no stream-K";
  if (t.k * dtype_bytes(in) != 128) return "K tiles of 128 bytes (64 16-bit or 128 fp8 elements: one swizzle row)";
  if (t.cluster_m * t.cluster_n > 2 || t.cluster_m < 1 || t.cluster_n < 1) return "clusters of 1 or 2 CTAs";
  const bool coop = t.schedule != Schedule::pingpong;
  // Cooperative warpgroups split the tile's rows: 64 each at least.
  if (coop && t.m != 128 && t.m != 256) return "cooperative tiles are 128 or 256 rows";
  if (!coop && t.m != 64 && t.m != 128) return "ping-pong tiles are 64 or 128 rows";
  if (t.n % 64 != 0 || t.n > 256) return "tile N is 64 to 256 in steps of 64";
  // A warpgroup holds its share of the tile in fp32 registers: more than 128 a thread spills.
  const int rows_per_warpgroup = coop ? t.m / 2 : t.m;
  if (rows_per_warpgroup * t.n / 128 > 128) return "more than 128 accumulators a thread";
  return "";
}

std::vector<Unit> units_for(const UnitKind& kind, Search level) {
  std::vector<Unit> out;
  for (int tier = 0; tier < tiers_of(level); ++tier) {
    // The tier's tiles in the kind's K (128 bytes), less those the kind cannot build (block scales
    // take no stream-K): a unit instantiates all it lists.
    Unit u{kind, tier, {}};
    for (TileConfig t : catalogue()[size_t(tier)]) {
      t.k = 128 / int(dtype_bytes(kind.in));
      if (illegal_reason(t, kind.in, kind.scale).empty()) u.tiles.push_back(t);
    }
    if (!u.tiles.empty()) out.push_back(std::move(u));
  }
  return out;
}

double estimate_us(const TileConfig& t, const GemmProblem& p, const DeviceInfo& d) {
  const int sms = std::max(d.sm_count, 1);
  const double tiles = double(ceil_div(p.m, t.m) * ceil_div(p.n, t.n) * p.batch);
  const double intensity = double(t.m) * t.n / (t.m + t.n);
  const double peak = Model::kPeak * (is_fp8(p.a) ? 2 : 1);
  double tile_us =
      2.0 * t.m * t.n * double(p.k) / (peak / sms * intensity / (intensity + Model::kHalfPeakIntensity)) * 1e6;
  if (t.schedule == Schedule::pingpong) tile_us *= Model::kPingpongShare;
  if (t.cluster_m * t.cluster_n > 1) tile_us *= Model::kClusterShare;
  // Whole tiles in waves over the SMs; stream-K spreads the last wave's K over all of them.
  const double waves = t.schedule == Schedule::streamk ? tiles / sms : std::ceil(tiles / sms);
  const double compute_us = waves * tile_us + (t.schedule == Schedule::streamk ? Model::kStreamKOverheadUs : 0.0);
  const double dram_us = p.min_bytes() / Model::kDramBytesPerSecond * 1e6;
  return std::max(compute_us, dram_us) + Model::kLaunchUs;
}

std::vector<CutlassConfig> ranked_configs(const GemmProblem& p, const DeviceInfo& d, Search level) {
  if (!unsupported_reason(p).empty()) return {};
  std::vector<std::pair<double, CutlassConfig>> scored;
  // The model cannot see the tile order: a kernel's orders tie, and the stable sort keeps its
  // default first.
  for (const Unit& u : units_for(UnitKind::of(p), level))
    for (size_t i = 0; i < u.tiles.size(); ++i)
      for (const auto& [raster, swizzle] : orders_of(level))
        scored.push_back({estimate_us(u.tiles[i], p, d), {u, int(i), raster, swizzle}});
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<CutlassConfig> out;
  for (auto& [us, c] : scored) out.push_back(std::move(c));
  return out;
}

}  // namespace gf::cutlass_backend

#include "backends/gemm/triton/space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "core/arith.hpp"
#include "core/ranking.hpp"

namespace gf::triton_backend {
namespace {

struct Entry {
  int bm, bn, bk, stages, warps;
};
// torch/_inductor/template_heuristics/triton.py: mm_configs and persistent_mm_configs.
constexpr Entry kInductorMm[] = {
    {32, 32, 16, 1, 2},   {32, 32, 128, 2, 4},  {32, 64, 32, 5, 8},   {64, 32, 32, 5, 8},   {64, 32, 128, 5, 4},
    {64, 64, 16, 2, 4},   {64, 64, 32, 2, 4},   {64, 64, 64, 3, 8},   {64, 64, 128, 5, 4},  {64, 128, 32, 3, 4},
    {64, 128, 32, 4, 8},  {64, 128, 64, 3, 4},  {64, 128, 128, 4, 4}, {128, 64, 32, 3, 4},  {128, 64, 32, 4, 8},
    {128, 128, 32, 2, 8}, {128, 128, 32, 3, 4}, {128, 128, 64, 3, 4}, {128, 128, 64, 5, 8}, {128, 128, 128, 4, 8},
};
constexpr Entry kInductorPersistent[] = {
    {128, 256, 64, 3, 8}, {128, 128, 64, 3, 8}, {128, 128, 128, 3, 8}, {128, 128, 128, 3, 4},
    {128, 128, 64, 4, 8}, {128, 128, 64, 5, 8}, {256, 128, 64, 4, 8},  {128, 128, 64, 5, 4},
};

// Its scaled_mm_configs and scaled_persistent_mm_configs: the space Inductor searches for fp8
// (torch._scaled_mm), with the small-M tiles that decode's scaled GEMMs want.
constexpr Entry kInductorScaledMm[] = {
    {128, 256, 32, 3, 8}, {256, 128, 32, 3, 8},  {256, 64, 32, 4, 4},   {64, 256, 32, 4, 4},   {128, 128, 32, 4, 4},
    {128, 64, 32, 4, 4},  {64, 128, 32, 4, 4},   {128, 32, 32, 4, 4},   {64, 32, 32, 5, 2},    {256, 128, 128, 3, 8},
    {256, 64, 128, 4, 4}, {64, 256, 128, 4, 4},  {128, 128, 128, 4, 4}, {128, 64, 64, 4, 4},   {64, 128, 64, 4, 4},
    {128, 32, 64, 4, 4},  {64, 32, 64, 5, 2},    {64, 16, 256, 5, 4},   {64, 32, 256, 5, 4},   {64, 128, 128, 2, 4},
    {64, 128, 128, 3, 4}, {128, 128, 128, 2, 4}, {128, 256, 128, 4, 8}, {256, 128, 128, 2, 4}, {256, 128, 128, 2, 8},
};
// Inductor's list also sweeps 16 and 32 rows by 32..256 columns, K 32 or 64, 2..6 stages: the
// same tiles at every stage count.
constexpr int kScaledSmallStages[] = {2, 3, 4, 5, 6};
constexpr Entry kInductorScaledPersistent[] = {
    {128, 128, 64, 3, 8},  {128, 128, 128, 3, 8}, {128, 128, 128, 4, 8}, {128, 128, 128, 4, 4}, {128, 128, 128, 3, 4},
    {128, 128, 128, 5, 4}, {128, 128, 128, 5, 8}, {128, 128, 128, 6, 8}, {128, 128, 64, 4, 8},  {64, 32, 256, 5, 4},
    {128, 256, 128, 3, 8}, {64, 128, 256, 4, 4},  {64, 256, 128, 4, 4},
};

// The ranking model's constants, one a line with its reason.
struct Model {
  // Peak dense 16-bit tensor-core rate of the GPU (H100/H200 SXM); fp8 runs at twice it.
  static constexpr double kPeak = 989e12, kFp8Speedup = 2.0;
  // A tile's operand intensity BM*BN/(BM+BN) at which a Triton tile reaches half the peak.
  static constexpr double kHalfPeakIntensity = 16.0;
  // DRAM an H200 achieves for a GEMM's operands.
  static constexpr double kDramBytesPerSecond = 3.3e12;
  // The persistent TMA template's share of the classic one's time: TMA loads, no launch a tile.
  static constexpr double kPersistentShare = 0.92;
};

}  // namespace

std::string TritonConfig::name() const {
  return fmt::format("{}_{}x{}x{}_s{}_w{}_g{}{}", tmpl == "mm" ? "mm" : "tma", bm, bn, bk, stages, warps, group,
                     tmpl == "mm" ? "" : fmt::format("_p{}", num_sms));
}

nlohmann::json TritonConfig::to_json() const {
  return {{"template", tmpl}, {"bm", bm},       {"bn", bn},       {"bk", bk},
          {"stages", stages}, {"warps", warps}, {"group", group}, {"num_sms", num_sms}};
}

TritonConfig TritonConfig::from_json(const nlohmann::json& j) {
  return {.tmpl = j.at("template"),
          .bm = j.at("bm"),
          .bn = j.at("bn"),
          .bk = j.at("bk"),
          .stages = j.at("stages"),
          .warps = j.at("warps"),
          .group = j.at("group"),
          .num_sms = j.at("num_sms")};
}

std::string unsupported_reason(const GemmProblem& p) {
  if (p.a == DType::f32) return "f32 inputs are not in the Triton templates";
  if (p.batch != 1) return "batched GEMMs are not in the Triton templates";
  if (is_fp8(p.a)) {
    if (is_fp8(p.out)) return "fp8 outputs are not in the Triton templates";
    if (p.k % 16 != 0) return "fp8 needs K a multiple of 16 (16-byte rows)";
    if (p.epilogue.gate != GateKind::none) return "fp8 with SwiGLU is not in the Triton templates";
    if (p.epilogue.scale == ScaleKind::block128) return "block scales are not in the Triton templates";
  }
  if (p.epilogue.gate != GateKind::none && p.layout == Layout::nn) return "SwiGLU needs layout tn";
  return "";
}

std::string illegal_reason(const TritonConfig& c, const GemmProblem& p) {
  for (int v : {c.bm, c.bn, c.bk})
    if (v < 16 || v > 256 || (v & (v - 1)) != 0) return "blocks are powers of two in [16, 256]";
  if (c.warps != 2 && c.warps != 4 && c.warps != 8) return "2, 4 or 8 warps";
  if (c.stages < 1 || c.stages > 6) return "1 to 6 stages";
  if (is_fp8(p.a) && c.bk < 32) return "fp8 wgmma takes K in steps of 32";
  const int tiles = p.epilogue.gate == GateKind::split ? 2 : 1;
  const int64_t smem = int64_t(c.stages) * (c.bm * c.bk + tiles * c.bk * c.bn) * dtype_bytes(p.a);
  if (smem > 227 * 1024) return fmt::format("{} bytes of shared memory", smem);
  if (c.tmpl == "mm_persistent_tma") {
    if (p.k % 8 != 0 || (p.layout == Layout::nn && p.n % 8 != 0)) return "TMA needs 16-byte row pitches";
    if (p.epilogue.gate == GateKind::split) return "the persistent template has no split gate";
  } else if (c.tmpl != "mm") {
    return "unknown template";
  }
  return "";
}

int64_t num_tiles(const TritonConfig& c, const GemmProblem& p) {
  const int64_t cols = p.epilogue.gate == GateKind::split ? p.n / 2 : p.n;
  return ceil_div(p.m, c.bm) * ceil_div(cols, c.bn);
}

std::vector<TritonConfig> ranked_configs(const GemmProblem& p, const DeviceInfo& d, Search level) {
  std::vector<TritonConfig> all;
  const int sms = std::max(d.sm_count, 1);
  auto config = [&](const char* tmpl, const Entry& e) {
    return TritonConfig{.tmpl = tmpl,
                        .bm = e.bm,
                        .bn = e.bn,
                        .bk = e.bk,
                        .stages = e.stages,
                        .warps = e.warps,
                        .group = 8,
                        .num_sms = sms};
  };
  if (is_fp8(p.a)) {
    for (const Entry& e : kInductorScaledMm) all.push_back(config("mm", e));
    for (int stages : kScaledSmallStages)
      for (int bm : {16, 32})
        for (int bk : {32, 64})
          for (int bn : {32, 64, 128, 256}) all.push_back(config("mm", {bm, bn, bk, stages, bn >= 128 ? 4 : 2}));
    for (const Entry& e : kInductorScaledPersistent) all.push_back(config("mm_persistent_tma", e));
  } else {
    for (const Entry& e : kInductorMm) all.push_back(config("mm", e));
    for (const Entry& e : kInductorPersistent) all.push_back(config("mm_persistent_tma", e));
  }
  if (level == Search::exhaustive)
    for (int bm : {16, 32, 64, 128, 256})
      for (int bn : {16, 32, 64, 128, 256})
        for (int bk : {16, 32, 64, 128, 256})
          for (int stages : {1, 2, 3, 4, 5})
            for (int warps : {2, 4, 8}) {
              const TritonConfig c = config("mm", {bm, bn, bk, stages, warps});
              if (std::find(all.begin(), all.end(), c) == all.end()) all.push_back(c);
            }
  // Model: tiles in waves over the SMs, each tile's time falling with its arithmetic intensity.
  std::vector<std::pair<double, TritonConfig>> scored;
  for (const auto& c : all) {
    if (!illegal_reason(c, p).empty()) continue;
    const double tiles = double(num_tiles(c, p));
    const double intensity = double(c.bm) * c.bn / (c.bm + c.bn);
    const double peak = Model::kPeak * (is_fp8(p.a) ? Model::kFp8Speedup : 1.0);
    const double tile_s = 2.0 * c.bm * c.bn * p.k / (peak / sms * intensity / (intensity + Model::kHalfPeakIntensity));
    const double waves = std::ceil(tiles / sms);
    const double dram_s = p.min_bytes() / Model::kDramBytesPerSecond;
    const double persistent = c.tmpl == "mm" ? 1.0 : Model::kPersistentShare;
    scored.emplace_back(std::max(waves * tile_s * persistent, dram_s), c);
  }
  if (scored.empty()) return {};
  const size_t keep = level == Search::fast ? 8 : level == Search::normal ? 30 : scored.size();
  return diverse_head<TritonConfig>(std::move(scored), keep,
                                    {[](const TritonConfig& c) { return fmt::format("{}{}x{}", c.tmpl, c.bm, c.bn); }});
}

nlohmann::json compile_request(const TritonConfig& c, const GemmProblem& p) {
  const Epilogue& e = p.epilogue;
  // The epilogue's kinds go by their names (gemmforge/codes.hpp), which the templates compare.
  nlohmann::json ce = {{"ACT", to_string(e.act)},
                       {"BIAS", to_string(e.bias)},
                       {"HAS_C", e.has_c()},
                       {"GATE", to_string(e.gate)},
                       {"SCALE", to_string(e.scale)},
                       {"NN", p.layout == Layout::nn},
                       {"BLOCK_M", c.bm},
                       {"BLOCK_N", c.bn},
                       {"BLOCK_K", c.bk},
                       {"GROUP_M", c.group},
                       {"NUM_STAGES", c.stages}};
  if (c.tmpl == "mm_persistent_tma") ce["NUM_SMS"] = c.num_sms;
  // Pointers are checked 16-byte aligned at launch; sizes get the hint where the problem has it.
  nlohmann::json divisible = {0, 1, 2, 3, 4};
  const int64_t sizes[] = {p.m, p.n, p.k, p.out_cols()};
  for (int i = 0; i < 4; ++i)
    if (sizes[i] % 16 == 0) divisible.push_back(5 + i);
  nlohmann::json req = {{"op", "compile"},         {"template", c.tmpl},    {"dtype", to_string(p.a)},
                        {"out", to_string(p.out)}, {"constexprs", ce},      {"num_warps", c.warps},
                        {"num_stages", c.stages},  {"divisible", divisible}};
  if (p.b != p.a) req["dtype_b"] = to_string(p.b);  // only then: the one-dtype kernels keep their cache keys
  return req;
}

}  // namespace gf::triton_backend

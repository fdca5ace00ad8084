#include "backends/rowop/triton/space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/arith.hpp"

namespace gf::triton_rowops {
namespace {

// The largest block a program holds in registers: 64 fp32 values a thread at 32 warps.
constexpr int kMaxSingleBlock = 65536;

int pow2_at_least(int64_t n) {
  int p = 1;
  while (p < n) p *= 2;
  return p;
}

// How far a config is from the sweet spot, smaller first: 16 values a thread (two 16-byte
// vectors of bf16), whole rows before loops.
double distance(const TritonRowConfig& c) { return std::abs(std::log2(c.per_thread() / 16.0)) + (c.single ? 0 : 3); }

}  // namespace

std::string TritonRowConfig::name() const {
  return fmt::format("triton_{}_b{}_r{}_w{}", single ? "row" : "loop", block, rows, warps);
}

nlohmann::json TritonRowConfig::to_json() const {
  return {{"block", block}, {"rows", rows}, {"warps", warps}, {"single", single}};
}

TritonRowConfig TritonRowConfig::from_json(const nlohmann::json& j) {
  TritonRowConfig c;
  c.block = j.at("block");
  c.rows = j.at("rows");
  c.warps = j.at("warps");
  c.single = j.at("single");
  return c;
}

std::string unsupported_reason(const RowOpSpec& s) {
  if (std::string why = s.invalid_reason(); !why.empty()) return why;
  if (s.kind == RowOpKind::layernorm) return "the Triton row ops are softmax and RMSNorm";
  if (s.cols >= (int64_t(1) << 30)) return "the Triton row ops index a row in 32 bits: cols must be below 2^30";
  return "";
}

std::vector<TritonRowConfig> ranked_configs(const RowOpSpec& s, Search level) {
  std::vector<TritonRowConfig> out;
  if (!unsupported_reason(s).empty()) return out;
  const int row_block = pow2_at_least(s.cols);
  for (int warps : {1, 2, 4, 8, 16, 32}) {
    if (row_block <= kMaxSingleBlock)
      for (int rows : {1, 2, 4, 8, 16}) {
        if (rows > 1 && (row_block * rows > 8192 || rows > s.rows)) continue;
        TritonRowConfig c{row_block, rows, warps, true};
        // Tiny rows still get one warp (its lanes share the few values).
        if ((c.per_thread() >= 4 || warps == 1) && c.per_thread() <= 64) out.push_back(c);
      }
    if (s.cols > 8192)
      for (int block : {2048, 4096, 8192, 16384}) {
        TritonRowConfig c{block, 1, warps, false};
        if (block < s.cols && c.per_thread() >= 8 && c.per_thread() <= 32) out.push_back(c);
      }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const TritonRowConfig& a, const TritonRowConfig& b) { return distance(a) < distance(b); });
  const size_t n = level == Search::fast ? 6 : level == Search::normal ? 16 : out.size();
  if (out.size() > n) out.resize(n);
  return out;
}

int64_t programs(const TritonRowConfig& c, const RowOpSpec& s) { return ceil_div(s.rows, int64_t(c.rows)); }

nlohmann::json compile_request(const TritonRowConfig& c, const RowOpSpec& s) {
  nlohmann::json constexprs = {{"BLOCK", c.block}, {"R", c.rows}, {"SINGLE", c.single}};
  if (s.kind == RowOpKind::softmax)
    constexprs["VALID"] = s.valid_len;
  else
    constexprs["RESIDUAL"] = s.residual;
  nlohmann::json req = {{"op", "compile_rowop"},
                        {"template", std::string(to_string(s.kind))},
                        {"in", std::string(to_string(s.in))},
                        {"out", std::string(to_string(s.out))},
                        {"constexprs", constexprs},
                        {"num_warps", c.warps}};
  // Rows of a multiple of 16 elements keep every row 16-byte aligned: Triton vectorizes.
  req["divisible"] = s.cols % 16 == 0 ? nlohmann::json({0, 1, 2, 3, 4, 7}) : nlohmann::json::array();
  return req;
}

}  // namespace gf::triton_rowops

#include "backends/rowop/cute/space.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/arith.hpp"

namespace gf::cute_rowops {
namespace {

// Registers ptxas may give a thread of a CTA of that size (the kernel declares its size), and
// those a thread needs beside the row it holds (python/gemmforge_cute/rowop_config.py, register_cap).
int register_cap(int threads) { return threads <= 256 ? 255 : threads == 512 ? 128 : 64; }
constexpr int kRegisterOverhead = 32;

// Every legal config for s, each iters the fewest that hold the row.
std::vector<CuteRowConfig> legal_configs(const RowOpSpec& s) {
  std::vector<CuteRowConfig> out;
  const int vec = 16 / dtype_bytes(s.in);
  for (int threads : {128, 256, 512, 1024})
    for (int rows : {1, 2, 4, 8})
      for (int cluster : {1, 2, 4, 8}) {
        CuteRowConfig c{threads, rows, vec, 1, cluster};
        c.iters = int(ceil_div(s.cols, int64_t(c.group()) * vec * cluster));
        if (rows > 1 && rows > s.rows) continue;
        if (illegal_reason(c, s).empty()) out.push_back(c);
      }
  return out;
}

// Smaller first: 16-32 values a thread, clusters only where a CTA cannot hold the row, capacity
// not much past the row.
double distance(const CuteRowConfig& c, const RowOpSpec& s) {
  const double values = c.values_per_thread();
  const double off = values < 16 ? std::log2(16 / values) : values > 32 ? std::log2(values / 32) : 0.0;
  return off + 0.75 * std::log2(c.cluster) + 4.0 * (double(c.capacity()) / double(s.cols) - 1.0);
}

}  // namespace

std::string CuteRowConfig::name() const {
  return fmt::format("cute_t{}_r{}_v{}_i{}_c{}", threads, rows_per_cta, vec, iters, cluster);
}

nlohmann::json CuteRowConfig::to_json() const {
  return {{"threads", threads}, {"rows_per_cta", rows_per_cta}, {"vec", vec}, {"iters", iters}, {"cluster", cluster}};
}

CuteRowConfig CuteRowConfig::from_json(const nlohmann::json& j) {
  CuteRowConfig c;
  c.threads = j.at("threads");
  c.rows_per_cta = j.at("rows_per_cta");
  c.vec = j.at("vec");
  c.iters = j.at("iters");
  c.cluster = j.at("cluster");
  return c;
}

std::string unsupported_reason(const RowOpSpec& s) {
  if (std::string why = s.invalid_reason(); !why.empty()) return why;
  if (s.kind == RowOpKind::layernorm) return "the CuTe DSL row ops are softmax and RMSNorm";
  const int vec = 16 / dtype_bytes(s.in);
  if (s.cols % vec != 0)
    return fmt::format("the CuTe DSL row ops load 16 bytes at a time: cols must be a multiple of {}", vec);
  if (s.rows >= (int64_t(1) << 31)) return "the CuTe DSL row ops count rows in 32 bits";
  if (legal_configs(s).empty()) return "the row does not fit the registers of a cluster of 8 CTAs";
  return "";
}

std::string illegal_reason(const CuteRowConfig& c, const RowOpSpec& s) {
  if (c.vec != 16 / dtype_bytes(s.in)) return "vec must be one 16-byte access of the input";
  if (c.threads % 128 != 0 || c.threads > 1024) return "threads must be 128, 256, 512 or 1024";
  if (c.group() < 32 || c.group() * c.rows_per_cta != c.threads || (c.group() & (c.group() - 1)))
    return "a row's threads must be a power of two of at least one warp";
  if (c.cluster != 1 && c.cluster != 2 && c.cluster != 4 && c.cluster != 8) return "cluster must be 1, 2, 4 or 8";
  if (c.cluster > 1 && c.rows_per_cta > 1) return "a cluster splits one row";
  if (c.iters < 1 || c.iters > 16) return "iters must be 1..16";
  // The row as loaded (and the residual, loaded beside it before they are added), in registers.
  const int words = c.values_per_thread() * dtype_bytes(s.in) / 4 * (s.residual ? 2 : 1);
  if (words + kRegisterOverhead > register_cap(c.threads)) return "the row's values exceed a thread's registers";
  // A valid length's mask keeps about as many again beside them: softmax+valid spilled 8 bytes
  // with 64 words under 512 threads' 128 registers, where plain softmax fits, and fitted with 32
  // words under 1024 threads' 64 (ptxas, CUDA 13.0, 2026-12-05).
  if (s.valid_len && 2 * words >= register_cap(c.threads) && words > 32)
    return "the row's values and their mask exceed a thread's registers";
  if (c.capacity() < s.cols) return "the row does not fit";
  return "";
}

std::vector<CuteRowConfig> ranked_configs(const RowOpSpec& s, Search level) {
  if (!unsupported_reason(s).empty()) return {};
  std::vector<CuteRowConfig> out = legal_configs(s);
  std::stable_sort(out.begin(), out.end(),
                   [&](const CuteRowConfig& a, const CuteRowConfig& b) { return distance(a, s) < distance(b, s); });
  const size_t n = level == Search::fast ? 4 : level == Search::normal ? 8 : out.size();
  if (out.size() > n) out.resize(n);
  return out;
}

nlohmann::json compile_request(const CuteRowConfig& c, const RowOpSpec& s) {
  nlohmann::json req = c.to_json();
  req["op"] = "compile_rowop";
  req["kind"] = std::string(to_string(s.kind));
  req["in"] = std::string(to_string(s.in));
  req["out"] = std::string(to_string(s.out));
  req["residual"] = s.residual;
  req["valid_len"] = s.valid_len;
  return req;
}

}  // namespace gf::cute_rowops

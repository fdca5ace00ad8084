#pragma once
// The CuTe DSL row-op backend's search space (python/gemmforge_cute/rowops.py): CTAs of `threads`
// threads, `rows_per_cta` rows sharing one, every row held in registers (`iters` 16-byte vectors a
// thread), long rows split over a cluster of CTAs that reduce through distributed shared memory.
// A kernel serves every row length up to its capacity. Plain data, tested on the CPU.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gemmforge/backend.hpp"

namespace gf::cute_rowops {

struct CuteRowConfig {
  int threads = 256;
  int rows_per_cta = 1;
  int vec = 8;  // elements of one 16-byte access
  int iters = 1;
  int cluster = 1;

  int group() const { return threads / rows_per_cta; }                           // threads of one row in one CTA
  int64_t capacity() const { return int64_t(group()) * vec * iters * cluster; }  // columns
  int values_per_thread() const { return vec * iters; }
  std::string name() const;
  nlohmann::json to_json() const;
  static CuteRowConfig from_json(const nlohmann::json& j);
  bool operator==(const CuteRowConfig&) const = default;
};

std::string unsupported_reason(const RowOpSpec& s);
std::string illegal_reason(const CuteRowConfig& c, const RowOpSpec& s);
// Legal configs, most promising first: 16-32 values a thread, the smallest cluster, little of the
// capacity unused. fast 4, default 8, exhaustive all.
std::vector<CuteRowConfig> ranked_configs(const RowOpSpec& s, Search level);
// The compile request for the worker (python/gemmforge_cute/worker.py, compile_rowop).
nlohmann::json compile_request(const CuteRowConfig& c, const RowOpSpec& s);

}  // namespace gf::cute_rowops

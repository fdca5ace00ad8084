#pragma once
// The Triton backend's search space: the classic tiled template over Inductor's default mm
// configs and the persistent TMA template over its Hopper persistent configs; exhaustive adds the
// full product Inductor's exhaustive search uses. Plain data, tested on the CPU.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gemmforge/backend.hpp"

namespace gf::triton_backend {

struct TritonConfig {
  std::string tmpl = "mm";  // "mm" or "mm_persistent_tma"
  int bm = 128, bn = 128, bk = 64, stages = 3, warps = 8, group = 8;
  int num_sms = 132;  // persistent template: programs launched

  std::string name() const;
  nlohmann::json to_json() const;
  static TritonConfig from_json(const nlohmann::json& j);
  bool operator==(const TritonConfig&) const = default;
};

std::string unsupported_reason(const GemmProblem& p);
std::string illegal_reason(const TritonConfig& c, const GemmProblem& p);
// Configs best-first by a tile/wave model: fast 8, default ~30 (Inductor's lists), exhaustive all.
std::vector<TritonConfig> ranked_configs(const GemmProblem& p, const DeviceInfo& d, Search level);
// Output tiles (programs of the classic template).
int64_t num_tiles(const TritonConfig& c, const GemmProblem& p);
// The compile request for the worker (python/gemmforge_triton/worker.py).
nlohmann::json compile_request(const TritonConfig& c, const GemmProblem& p);

}  // namespace gf::triton_backend

#pragma once
// The CuTe DSL backend's search space: the TMA + wgmma template of python/gemmforge_cute over
// tile shapes, clusters and its schedules (one CTA a tile; persistent cooperative or ping-pong),
// and swap-AB for decode, ranked by a tile/wave model. Plain data, tested on the CPU.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gemmforge/backend.hpp"

namespace gf::cute_backend {

struct CuteConfig {
  int tile_m = 128, tile_n = 256;    // 64, 128 or 256; 64..256 in steps of 32 (swap-AB: 16, 32..128)
  int cluster_m = 1, cluster_n = 1;  // CTAs sharing B's (along M) or A's (along N) tiles by multicast
  bool persistent = false;           // warp-specialized persistent (else one CTA a tile)
  int split_k = 1;                   // one CTA a tile and K-slice, the slices summed in a workspace
  bool pingpong = false;             // persistent: two consumer warpgroups on alternate tiles
  // D^T = B A^T: the kernel's M is the problem's N (the weights fill wgmma's 64 rows) and its N the
  // problem's M (a decode's few tokens in an n16..n128 tile); D^T written M-major, which is D.
  bool swap_ab = false;

  std::string name() const;
  nlohmann::json to_json() const;
  static CuteConfig from_json(const nlohmann::json& j);
  bool operator==(const CuteConfig&) const = default;
};

std::string unsupported_reason(const GemmProblem& p);
// Why the template cannot run this config on this problem ("" if it can).
std::string illegal_reason(const CuteConfig& c, const GemmProblem& p);
// Split-K's workspace: fp32 sums of whole tiles (row-major, tiles_n * tile_n a row), then a
// counter a tile; zero before the first launch, left zero by every launch. {0, 0} without split-K.
struct SplitWorkspace {
  size_t partials_bytes = 0, counters_bytes = 0;
};
SplitWorkspace split_workspace(const CuteConfig& c, const GemmProblem& p);
// The problem the kernel computes: p, or swap-AB's transpose (M and N, bias rows and columns,
// scales of A and B exchanged).
GemmProblem kernel_problem(const CuteConfig& c, const GemmProblem& p);
// Configs best-first: fast 3 (4 at M <= 128), default 8, exhaustive all.
std::vector<CuteConfig> ranked_configs(const GemmProblem& p, const DeviceInfo& d, Search level);
// The compile request for the worker (python/gemmforge_cute/worker.py): everything the binary
// depends on, and nothing of M, N or K (one binary serves every shape).
nlohmann::json compile_request(const CuteConfig& c, const GemmProblem& p);

}  // namespace gf::cute_backend

#pragma once
// The Triton row-op backend's search space (python/gemmforge_triton/rowops.py): the whole row in
// one block, R rows a program, or a loop over chunks of long rows; warps per program. Plain data,
// tested on the CPU.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gemmforge/backend.hpp"

namespace gf::triton_rowops {

struct TritonRowConfig {
  int block = 1024;  // columns of one block: the row rounded up to a power of two, or a chunk
  int rows = 1;      // rows a program (R)
  int warps = 4;
  bool single = true;  // the whole row in one block (else a loop over chunks)

  // Elements of the block each thread holds.
  int per_thread() const { return block * rows / (32 * warps); }
  std::string name() const;
  nlohmann::json to_json() const;
  static TritonRowConfig from_json(const nlohmann::json& j);
  bool operator==(const TritonRowConfig&) const = default;
};

std::string unsupported_reason(const RowOpSpec& s);
// Legal configs, most promising first: whole rows with 8-32 elements a thread (16-byte vectors,
// few registers), then the chunked loop (long rows). fast 6, default 16, exhaustive all.
std::vector<TritonRowConfig> ranked_configs(const RowOpSpec& s, Search level);
int64_t programs(const TritonRowConfig& c, const RowOpSpec& s);
// The compile request for the worker (python/gemmforge_triton/worker.py, compile_rowop).
nlohmann::json compile_request(const TritonRowConfig& c, const RowOpSpec& s);

}  // namespace gf::triton_rowops

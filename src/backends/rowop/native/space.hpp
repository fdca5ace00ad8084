#pragma once
// A row-op kernel's parameters, their legality and the search space over them. Plain data and
// arithmetic: tested on the CPU.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gemmforge/rowop.hpp"

namespace gf::rowops {

struct RowConfig {
  int threads = 256;     // per CTA
  int rows_per_cta = 1;  // rows sharing a CTA (short rows)
  int vec = 8;           // elements per access
  int cluster = 1;       // CTAs per row (long rows)
  bool stream = false;   // two passes over the row instead of holding it in registers
  // Persistent CTAs streaming from copies of their parts that bulk copies put in shared memory,
  // `stages` parts (rows) in flight per CTA.
  bool bulk = false;
  int stages = 0;
  // bf16 softmax in registers: the row's max over bf16 pairs as loaded (max.bf16x2), the values
  // unpacked after it. Fewer instructions; faster at 16k and 256k columns, slower over clusters of
  // two at 64k, so the tuner decides.
  bool pair_max = false;

  // Bytes of x in one CTA's part of a row.
  int64_t part_bytes(const RowOpSpec& s) const;
  // Bytes of one bulk stage: the part of x and of the residual.
  int64_t stage_bytes(const RowOpSpec& s) const;
  // Bytes of the norms' weight (and LayerNorm's bias) over one part, which bulk CTAs keep in
  // shared memory; 0 for softmax.
  int64_t affine_bytes(const RowOpSpec& s) const;
  // Dynamic shared memory per CTA: the bulk stages, the affine parameters and their barriers.
  int smem_bytes(const RowOpSpec& s) const;

  int group() const { return threads / rows_per_cta; }
  // fp32 values each thread keeps in registers.
  int values_per_thread(int64_t cols) const;
  std::string name(const RowOpSpec& s) const;
  nlohmann::json to_json() const;
  static RowConfig from_json(const nlohmann::json& j);
  bool operator==(const RowConfig&) const = default;
};

std::string illegal_reason(const RowConfig& c, const RowOpSpec& s);
// Legal configs, most promising first (the widest vector, one or two 16-byte vectors per thread).
// Narrower vectors only where the widest cannot work, or with every_width.
std::vector<RowConfig> row_configs(const RowOpSpec& s, bool every_width = false);
// The first n of configs (all for n <= 0), a config and its pair-max twin counting as one: the
// knob is tried beside the configs it applies to, not in place of half of them.
std::vector<RowConfig> first_configs(std::vector<RowConfig> configs, int n);
// The configuration used when the DB has none: the first of row_configs.
RowConfig default_config(const RowOpSpec& s);
// The largest vector width (elements) that divides the row and fits 16 bytes of the input.
int widest_vec(const RowOpSpec& s);

}  // namespace gf::rowops

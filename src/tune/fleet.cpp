#include "tune/fleet.hpp"

#include <algorithm>
#include <map>

#include "core/strings.hpp"
#include "gemmforge/error.hpp"

namespace gf::tune {

Shard Shard::parse(const std::string& spec) {
  const auto parts = split(spec, '/');
  std::optional<int64_t> i, n;
  if (parts.size() == 2) {
    i = parse_int(parts[0]);
    n = parse_int(parts[1]);
  }
  GF_CHECK(i && n && *n >= 1 && *n <= kMaxShards && *i < *n,
           "--shard takes i/n, this host's shard i of n counted from 0 (0/4 ... 3/4), not {}", quote(spec));
  return {int(*i), int(*n)};
}

std::vector<std::string> shard_keys(std::vector<std::string> keys, Shard shard) {
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<std::string> mine;
  for (size_t k = size_t(shard.index); k < keys.size(); k += size_t(shard.count)) mine.push_back(keys[k]);
  return mine;
}

std::optional<std::vector<int>> parse_gpus(const std::string& spec) {
  if (spec == "all") return std::nullopt;
  std::vector<int> out;
  for (auto part : split(spec, ',')) {
    auto g = parse_int(part);
    GF_CHECK(g && *g < 4096, "--gpus takes all or GPU ordinals such as 0,1,3, not {}", quote(spec));
    out.push_back(int(*g));
  }
  return out;
}

std::vector<int> resolve_gpus(const std::optional<std::vector<int>>& wanted, int present,
                              const std::string& absent_reason) {
  GF_CHECK(present > 0,
           "--gpus: {}; without a GPU, gemmforge candidates and gemmforge compile still work",
           absent_reason.empty() ? "no GPU found" : absent_reason);
  if (!wanted) {
    std::vector<int> all(size_t(present), 0);
    for (int g = 0; g < present; ++g) all[size_t(g)] = g;
    return all;
  }
  for (int g : *wanted) GF_CHECK(g < present, "--gpus names GPU {}, but this host has {} (0 to {})", g, present, present - 1);
  return *wanted;
}

std::vector<std::vector<std::string>> assign_to_gpus(const std::vector<std::string>& keys,
                                                     const std::vector<std::string>& fingerprints) {
  std::vector<std::vector<std::string>> out(fingerprints.size());
  std::map<std::string, std::vector<size_t>> by_model;  // the GPUs of each model, in ordinal order
  for (size_t g = 0; g < fingerprints.size(); ++g) by_model[fingerprints[g]].push_back(g);
  for (const auto& [model, gpus] : by_model)
    for (size_t k = 0; k < keys.size(); ++k) out[gpus[k % gpus.size()]].push_back(keys[k]);
  return out;
}

}  // namespace gf::tune

#pragma once
// Cutting a model-ranked candidate list to a search level's size. Cost models are coarse, so the
// short lists explore: first the best-ranked config of each family (e.g. tile shape), then of
// each finer family (e.g. tile shape and variant), each tier in model order, then the rest.
#include <algorithm>
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace gf {

template <class Config>
std::vector<Config> diverse_head(std::vector<std::pair<double, Config>> scored, size_t keep,
                                 const std::vector<std::function<std::string(const Config&)>>& tiers) {
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Config> out;
  std::vector<bool> taken(scored.size(), false);
  for (const auto& family : tiers) {
    std::vector<std::string> seen;
    for (size_t i = 0; i < scored.size() && out.size() < keep; ++i) {
      if (taken[i]) continue;
      std::string f = family(scored[i].second);
      if (std::find(seen.begin(), seen.end(), f) != seen.end()) continue;
      seen.push_back(f);
      out.push_back(scored[i].second);
      taken[i] = true;
    }
  }
  for (size_t i = 0; i < scored.size() && out.size() < keep; ++i)
    if (!taken[i]) out.push_back(scored[i].second);
  return out;
}

}  // namespace gf

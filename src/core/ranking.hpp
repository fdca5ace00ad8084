#pragma once
// Cutting a model-ranked candidate list to a search level's size. Cost models are coarse, so the
// short lists explore: first the best-ranked config of each family (tile shape, schedule, ...),
// in model order, then the rest in model order.
#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace gf {

// scored: (modelled cost, config); family(config) returns an equality-comparable key.
template <class Config, class FamilyOf>
std::vector<Config> diverse_head(std::vector<std::pair<double, Config>> scored, size_t keep, FamilyOf family) {
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Config> firsts, rest;
  std::vector<decltype(family(scored.front().second))> seen;
  for (const auto& [cost, c] : scored) {
    auto f = family(c);
    if (std::find(seen.begin(), seen.end(), f) == seen.end()) {
      seen.push_back(f);
      firsts.push_back(c);
    } else {
      rest.push_back(c);
    }
  }
  std::vector<Config> out;
  for (const auto* list : {&firsts, &rest})
    for (const auto& c : *list)
      if (out.size() < keep) out.push_back(c);
  return out;
}

}  // namespace gf

#pragma once
// Cutting a model-ranked candidate list to a search level's size. Cost models are coarse, so the
// short lists explore: first the best-ranked config of each family (e.g. tile shape), then of
// each finer family (e.g. tile shape and variant), each tier in model order, then the rest. The
// first tier may be capped (first_tier_max) so that the finer ones still get a share of the list.
// Also the --only filter on candidates' names.
#include <algorithm>
#include <cstddef>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gf {

template <class Config>
std::vector<Config> diverse_head(std::vector<std::pair<double, Config>> scored, size_t keep,
                                 const std::vector<std::function<std::string(const Config&)>>& tiers,
                                 size_t first_tier_max = size_t(-1)) {
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Config> out;
  std::vector<bool> taken(scored.size(), false);
  for (const auto& family : tiers) {
    std::vector<std::string> seen;  // families already in the list, from this tier or an earlier one
    for (const Config& c : out) seen.push_back(family(c));
    const size_t limit = &family == &tiers.front() ? std::min(keep, first_tier_max) : keep;
    for (size_t i = 0; i < scored.size() && out.size() < limit; ++i) {
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

// The best-ranked (lowest-scored, the first of equals) config of `scored` that `wanted` picks, or null.
template <class Config, class Wanted>
const Config* best_ranked(const std::vector<std::pair<double, Config>>& scored, Wanted wanted) {
  const std::pair<double, Config>* best = nullptr;
  for (const auto& s : scored)
    if (wanted(s.second) && (!best || s.first < best->first)) best = &s;
  return best ? &best->second : nullptr;
}

// Unless the first `judged` configs of `head` hold one of `family`, the best-ranked one of
// `scored` that `wanted` picks (of the family, and where it can pay), appended where `head` lacks
// it: a family whose worth a model cannot price, so that the race measures it. Judging every level
// by the fast list's head (`judged` its length) appends the same config to each, so the fast list
// stays inside the default one.
template <class Config, class Family, class Wanted>
void add_best_of(std::vector<Config>& head, const std::vector<std::pair<double, Config>>& scored, Family family,
                 Wanted wanted, size_t judged = std::numeric_limits<size_t>::max()) {
  if (std::any_of(head.begin(), head.begin() + std::min(judged, head.size()), family)) return;
  const Config* best = best_ranked(scored, wanted);
  if (best && std::find(head.begin(), head.end(), *best) == head.end()) head.push_back(*best);
}

// The indices of `best` and of the other times within `band` of it, fastest first, at most
// `count` in all (times of 0 or less count as failed): a close field, worth timing again another way.
inline std::vector<size_t> close_field(const std::vector<double>& times, size_t best, double band, size_t count) {
  std::vector<size_t> field = {best};
  for (size_t i = 0; i < times.size(); ++i)
    if (i != best && times[i] > 0 && times[i] <= times[best] * band) field.push_back(i);
  std::stable_sort(field.begin() + 1, field.end(), [&](size_t a, size_t b) { return times[a] < times[b]; });
  if (field.size() > count) field.resize(count);
  return field;
}

// Per group (a backend), the close field of its fastest: its `each` fastest within `band` of it,
// and any of `keep` within the band besides; the indices, group by group in order of first
// appearance, each group's fastest first. Times of 0 or less count as failed.
inline std::vector<size_t> close_fields(const std::vector<std::string>& groups, const std::vector<double>& times,
                                        const std::vector<bool>& keep, double band, size_t each) {
  std::vector<size_t> out;
  std::vector<std::string> seen;
  for (const std::string& group : groups) {
    if (std::find(seen.begin(), seen.end(), group) != seen.end()) continue;
    seen.push_back(group);
    std::vector<size_t> mine;
    std::vector<double> mine_times;
    for (size_t i = 0; i < groups.size(); ++i)
      if (groups[i] == group) {
        mine.push_back(i);
        mine_times.push_back(times[i]);
      }
    size_t first = mine.size();
    for (size_t k = 0; k < mine.size(); ++k)
      if (mine_times[k] > 0 && (first == mine.size() || mine_times[k] < mine_times[first])) first = k;
    if (first == mine.size()) continue;
    const std::vector<size_t> field = close_field(mine_times, first, band, mine.size());
    for (size_t k = 0; k < field.size(); ++k)
      if (k < each || keep[mine[field[k]]]) out.push_back(mine[field[k]]);
  }
  return out;
}

// Whether a candidate's name contains one of the comma-separated texts of `only` (empty: every
// name); a text ending in '$' must end the name (`_tma2$` leaves out `_tma2_promote`). The --only
// filter of tune, compile, candidates and bench-ops, for timing a few variants side by side.
inline bool name_matches(std::string_view name, std::string_view only) {
  if (only.empty()) return true;
  for (size_t begin = 0; begin <= only.size();) {
    const size_t end = std::min(only.find(',', begin), only.size());
    std::string_view text = only.substr(begin, end - begin);
    const bool anchored = !text.empty() && text.back() == '$';
    if (anchored) text.remove_suffix(1);
    if (!text.empty() && (anchored ? name.ends_with(text) : name.find(text) != std::string_view::npos)) return true;
    begin = end + 1;
  }
  return false;
}

}  // namespace gf

#pragma once
// Races measured on the GPU and stored as `gemmforge tune --json` records, for tests that judge
// a search list by measured times rather than by names (issue 26: no test pins a winner).
#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "gemmforge/problem.hpp"

namespace gf::test {

struct StoredRace {
  GemmProblem problem;
  std::map<std::string, double> us;  // each verified candidate of the backend: its time
  double best_us;                    // the race's best: the record's best_us where it keeps one
};

// The races of one backend in a file: a list of records, or {"races": [...]} beside an "about".
// A record may keep only some candidates, with the race's best as best_us.
inline std::vector<StoredRace> load_races(const std::string& path, const std::string& backend) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("no stored race at " + path);
  nlohmann::json doc = nlohmann::json::parse(in);
  const nlohmann::json& records = doc.is_object() ? doc.at("races") : doc;
  std::vector<StoredRace> races;
  for (const auto& r : records) {
    StoredRace race{.problem = GemmProblem::parse(r.at("problem").get<std::string>()),
                    .best_us = std::numeric_limits<double>::infinity()};
    for (const auto& c : r.at("candidates"))
      if (c.at("verified").get<bool>() && c.at("backend") == backend) race.us[c.at("candidate")] = c.at("us");
    for (const auto& [name, t] : race.us) race.best_us = std::min(race.best_us, t);
    if (r.contains("best_us")) race.best_us = r.at("best_us").get<double>();
    races.push_back(std::move(race));
  }
  return races;
}

// A native kernel's time in the race: its own, or, for a ring deeper than 8 stages that the race
// did not hold, its 8-stage twin's. The races before 2026-12-06's depth race held 8 stages at most;
// they judge a list's tiles and splits, the depth race (docs/data/search/deep-pipelines-small-m-h100.json)
// its depths.
inline const double* stored_time(const StoredRace& race, const std::string& name) {
  if (auto it = race.us.find(name); it != race.us.end()) return &it->second;
  static const std::regex deep("_s(9|[1-9][0-9])_");
  if (std::regex_search(name, deep))
    if (auto it = race.us.find(std::regex_replace(name, deep, "_s8_")); it != race.us.end()) return &it->second;
  return nullptr;
}

// The best stored time among a list's names over the race's best; infinity where none was timed.
template <class Names>
double list_over_best(const StoredRace& race, const Names& names) {
  double best = std::numeric_limits<double>::infinity();
  for (const std::string& name : names)
    if (const double* t = stored_time(race, name)) best = std::min(best, *t);
  return best / race.best_us;
}

}  // namespace gf::test

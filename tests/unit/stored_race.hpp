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
#include <utility>
#include <vector>

#include "gemmforge/problem.hpp"

namespace gf::test {

struct StoredRace {
  GemmProblem problem;
  std::map<std::string, double> us;  // each verified candidate of the backend: its time
  double best_us;                    // the race's best: the record's best_us where it keeps one
  int deepest_ring = 0;              // the most stages a native kernel of the race has
};

// A native kernel name's ring depth field, `_s<stages>_`.
inline const std::regex& ring_field() {
  static const std::regex field("_s([0-9]+)_");
  return field;
}

// A native kernel's ring depth, or 0 for a name without one.
inline int ring_depth(const std::string& name) {
  std::smatch m;
  return std::regex_search(name, m, ring_field()) ? std::stoi(m[1]) : 0;
}

// A race of these times: its best and its deepest ring derived from them.
inline StoredRace race_of(GemmProblem problem, std::map<std::string, double> us) {
  StoredRace race{
      .problem = std::move(problem), .us = std::move(us), .best_us = std::numeric_limits<double>::infinity()};
  for (const auto& [name, t] : race.us) {
    race.best_us = std::min(race.best_us, t);
    race.deepest_ring = std::max(race.deepest_ring, ring_depth(name));
  }
  return race;
}

// The races of one backend in a file: a list of records, or {"races": [...]} beside an "about".
// A record may keep only some candidates, with the race's best as best_us.
inline std::vector<StoredRace> load_races(const std::string& path, const std::string& backend) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("no stored race at " + path);
  nlohmann::json doc = nlohmann::json::parse(in);
  const nlohmann::json& records = doc.is_object() ? doc.at("races") : doc;
  std::vector<StoredRace> races;
  for (const auto& r : records) {
    std::map<std::string, double> us;
    for (const auto& c : r.at("candidates"))
      if (c.at("verified").get<bool>() && c.at("backend") == backend) us[c.at("candidate")] = c.at("us");
    StoredRace race = race_of(GemmProblem::parse(r.at("problem").get<std::string>()), std::move(us));
    if (r.contains("best_us")) race.best_us = r.at("best_us").get<double>();
    races.push_back(std::move(race));
  }
  return races;
}

// A kernel's time in the race: its own, or, for a native ring deeper than 8 stages in a race run
// before the rings went deeper (its kernels have 8 stages at most), its 8-stage twin's. Such a race
// judges a list's tiles and splits; the depth race (docs/data/search/deep-pipelines-small-m-h100.json)
// judges its depths. A twin may run a few percent apart from the kernel it stands for (up to 4% in
// the depth race), and a kernel whose deeper ring left room for fewer staging boxes has no twin.
inline const double* stored_time(const StoredRace& race, const std::string& name, bool* by_twin = nullptr) {
  if (auto it = race.us.find(name); it != race.us.end()) return &it->second;
  if (race.deepest_ring <= 8 && name.starts_with("sm90_") && ring_depth(name) > 8)
    if (auto it = race.us.find(std::regex_replace(name, ring_field(), "_s8_")); it != race.us.end()) {
      if (by_twin) *by_twin = true;
      return &it->second;
    }
  return nullptr;
}

// The best stored time among a list's names over the race's best; infinity where none was timed.
// twins, where given, counts the names judged by an 8-stage twin.
template <class Names>
double list_over_best(const StoredRace& race, const Names& names, int* twins = nullptr) {
  double best = std::numeric_limits<double>::infinity();
  for (const std::string& name : names) {
    bool by_twin = false;
    if (const double* t = stored_time(race, name, &by_twin)) {
      best = std::min(best, *t);
      if (twins && by_twin) ++*twins;
    }
  }
  return best / race.best_us;
}

}  // namespace gf::test

#include "store/decision_json.hpp"

#include <cmath>

#include "core/strings.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/problem.hpp"
#include "gemmforge/rowop.hpp"

namespace gf::store {
namespace {

// Typed reads of an object's fields, each failing with the field's name.
struct Fields {
  const nlohmann::json& e;

  [[noreturn]] static void bad(const std::string& why) { GF_FAIL("{}", why); }
  const nlohmann::json& at(const char* key) const {
    if (!e.contains(key)) bad(fmt::format("{} is missing", key));
    return e[key];
  }
  std::string text(const char* key) const {
    if (!at(key).is_string()) bad(fmt::format("{} is not a string", key));
    return e[key].get<std::string>();
  }
  double number(const char* key) const {
    const auto& v = at(key);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
      bad(fmt::format("{} is not a non-negative number", key));
    return v.get<double>();
  }
  bool flag(const char* key) const {
    if (!at(key).is_boolean()) bad(fmt::format("{} is not true or false", key));
    return e[key].get<bool>();
  }
  nlohmann::json object(const char* key) const {
    if (!at(key).is_object()) bad(fmt::format("{} is not an object", key));
    return e[key];
  }
};

}  // namespace

nlohmann::json decision_json(const Decision& d, const std::string& device) {
  return {{"problem", d.problem},
          {"device", device},
          {"family", d.family},
          {"backend", d.backend},
          {"backend_version", d.backend_version},
          {"candidate", d.candidate},
          {"config", d.config},
          {"us", d.us},
          {"rate", d.rate},
          {"search", d.search},
          {"candidates", d.candidates},
          {"backends_considered", d.backends_considered},
          {"tuned_at", d.tuned_at}};
}

std::pair<std::string, Decision> decision_from_json(const nlohmann::json& e) {
  if (!e.is_object()) Fields::bad("not an object");
  const Fields f{e};
  Decision d;
  const std::string device = f.text("device");
  d.problem = f.text("problem");
  d.family = f.text("family");
  d.backend = f.text("backend");
  d.backend_version = f.text("backend_version");
  d.candidate = f.text("candidate");
  d.search = f.text("search");
  d.tuned_at = f.text("tuned_at");
  d.us = f.number("us");
  d.rate = f.number("rate");
  d.candidates = int(f.number("candidates"));
  d.config = f.object("config");
  if (!f.at("backends_considered").is_array()) Fields::bad("backends_considered is not a list");
  for (const auto& b : e["backends_considered"]) {
    if (!b.is_string()) Fields::bad("backends_considered holds a non-string");
    d.backends_considered.push_back(b.get<std::string>());
  }
  // A pinned decision (gemmforge db pin) has no time: 0, so it is the faster of any two.
  const bool pinned = d.pinned();
  if (device.empty() || d.backend.empty() || d.candidate.empty() || !(d.us > 0 || (pinned && d.us == 0)))
    Fields::bad("an empty device, backend, candidate or time");
  if (d.search != "fast" && d.search != "default" && d.search != "exhaustive" && !pinned)
    Fields::bad("search " + quote(d.search));
  // The problem must be one this gemmforge reads back as the same key.
  std::string reparsed;
  if (d.family == "gemm")
    reparsed = GemmProblem::parse(d.problem).key();
  else if (d.family == "rowop")
    reparsed = RowOpSpec::parse(d.problem).key();
  else
    Fields::bad("family " + quote(d.family));
  if (reparsed != d.problem)
    Fields::bad(fmt::format("problem {} is not in its canonical form {}", quote(d.problem), reparsed));
  return {device, std::move(d)};
}

nlohmann::json measurements_json(const std::vector<Measurement>& ms) {
  nlohmann::json out = nlohmann::json::array();
  for (const Measurement& m : ms)
    out.push_back({{"backend", m.backend},
                   {"candidate", m.candidate},
                   {"config", m.config},
                   {"verified", m.verified},
                   {"us", m.us},
                   {"rate", m.rate},
                   {"rel_err", m.rel_err},
                   {"compile_seconds", m.compile_seconds},
                   {"error", m.error}});
  return out;
}

std::vector<Measurement> measurements_from_json(const nlohmann::json& j, const std::string& problem) {
  if (!j.is_array()) Fields::bad("measurements is not a list");
  std::vector<Measurement> out;
  for (const auto& e : j) {
    if (!e.is_object()) Fields::bad("a measurement is not an object");
    const Fields f{e};
    Measurement m;
    m.problem = problem;
    m.backend = f.text("backend");
    m.candidate = f.text("candidate");
    m.config = f.at("config");
    m.verified = f.flag("verified");
    m.us = f.number("us");
    m.rate = f.number("rate");
    // rel_err is -1 where nothing was compared; a NaN error was written as null.
    const auto& rel_err = f.at("rel_err");
    if (!rel_err.is_number() && !rel_err.is_null()) Fields::bad("rel_err is not a number");
    m.rel_err = rel_err.is_number() ? rel_err.get<double>() : -1;
    m.compile_seconds = f.number("compile_seconds");
    m.error = f.text("error");
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace gf::store

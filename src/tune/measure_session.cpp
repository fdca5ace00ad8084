#include "tune/measure_session.hpp"

#include "gemmforge/error.hpp"

namespace gf::tune {
namespace {

Measurement blank(const std::string& key, const Candidate& c) { return {key, c.backend, c.name, c.config}; }

// The candidate's measurement from a worker's result (worker_main.cpp's result_json).
Measurement from_result(const std::string& key, const Candidate& c, const nlohmann::json& r) {
  Measurement m = blank(key, c);
  m.verified = r.value("verified", false);
  m.rel_err = r.value("rel_err", -1.0);
  m.error = r.value("error", "");
  m.us = r.value("us", 0.0);
  m.graph_us = r.value("graph_us", 0.0);
  return m;
}

}  // namespace

MeasureSession::MeasureSession(WorkerProcess& worker, std::string_view family, std::string key, uint64_t seed,
                               double timeout_s, int hold)
    : worker_(worker), family_(family), key_(std::move(key)), seed_(seed), timeout_s_(timeout_s), hold_(hold) {}

void MeasureSession::ensure_problem() {
  if (problem_ready_ && hold_ == 1 && worker_.alive()) return;
  // Setting up allocates the inputs and runs the reference: allow for large problems. A problem
  // the worker holds is only made current again.
  auto reply =
      worker_.call({{"op", "problem"}, {"family", family_}, {"problem", key_}, {"seed", seed_}, {"hold", hold_}},
                   std::max(timeout_s_, 600.0));
  GF_CHECK(reply.value("ok", false), "worker could not set up {}: {}", key_, reply.value("error", ""));
  problem_ready_ = true;
}

Measurement MeasureSession::measure(const Candidate& candidate, bool time, bool graph) {
  ensure_problem();
  auto reply = worker_.call(
      {{"op", "measure"}, {"candidate", candidate}, {"time", time}, {"timing", {{"graph", graph}}}}, timeout_s_);
  if (reply.value("crashed", false) || reply.value("fatal", false)) problem_ready_ = false;
  if (!reply.value("ok", false)) {
    Measurement m = blank(key_, candidate);
    m.error = reply.value("error", "unknown worker error");
    return m;
  }
  return from_result(key_, candidate, reply);
}

std::vector<Measurement> MeasureSession::race(const std::vector<Candidate>& candidates, int rounds) {
  if (candidates.empty()) return {};
  ensure_problem();
  // The kernels were built and verified in this worker: the race is their launches, with a few
  // seconds' allowance for each kernel that is rebuilt after a restart.
  const double timeout_s = timeout_s_ + 2.0 * double(candidates.size());
  auto reply =
      worker_.call({{"op", "race"}, {"candidates", candidates}, {"rounds", rounds}, {"seed", seed_}}, timeout_s);
  if (reply.value("crashed", false) || reply.value("fatal", false)) problem_ready_ = false;
  if (!reply.value("ok", false)) return {};
  std::vector<Measurement> out;
  const auto& results = reply.at("results");
  for (size_t i = 0; i < candidates.size(); ++i) out.push_back(from_result(key_, candidates[i], results.at(i)));
  return out;
}

}  // namespace gf::tune

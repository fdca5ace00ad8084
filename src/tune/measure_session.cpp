#include "tune/measure_session.hpp"

#include "gemmforge/error.hpp"

namespace gf::tune {

MeasureSession::MeasureSession(const std::string& worker_exe, std::string_view family, std::string key, uint64_t seed,
                               double timeout_s)
    : worker_({worker_exe, "__worker"}), family_(family), key_(std::move(key)), seed_(seed), timeout_s_(timeout_s) {}

void MeasureSession::ensure_problem() {
  if (problem_ready_ && worker_.alive()) return;
  // Setting up allocates the inputs and runs the reference: allow for large problems.
  auto reply = worker_.call({{"op", "problem"}, {"family", family_}, {"problem", key_}, {"seed", seed_}},
                            std::max(timeout_s_, 600.0));
  GF_CHECK(reply.value("ok", false), "worker could not set up {}: {}", key_, reply.value("error", ""));
  problem_ready_ = true;
}

Measurement MeasureSession::measure(const Candidate& candidate, bool time, bool graph) {
  ensure_problem();
  Measurement m;
  m.problem = key_;
  m.backend = candidate.backend;
  m.candidate = candidate.name;
  m.config = candidate.config;
  auto reply = worker_.call(
      {{"op", "measure"}, {"candidate", candidate}, {"time", time}, {"timing", {{"graph", graph}}}}, timeout_s_);
  if (reply.value("crashed", false) || reply.value("fatal", false)) problem_ready_ = false;
  if (!reply.value("ok", false)) {
    m.error = reply.value("error", "unknown worker error");
    return m;
  }
  m.verified = reply.value("verified", false);
  m.rel_err = reply.value("rel_err", -1.0);
  m.error = reply.value("error", "");
  m.us = reply.value("us", 0.0);
  m.graph_us = reply.value("graph_us", 0.0);
  return m;
}

}  // namespace gf::tune

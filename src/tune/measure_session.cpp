#include "tune/measure_session.hpp"

#include "gemmforge/error.hpp"

namespace gf::tune {

MeasureSession::MeasureSession(const std::string& worker_exe, const GemmProblem& problem, uint64_t seed,
                               double timeout_s)
    : worker_({worker_exe, "__worker"}), problem_(problem), seed_(seed), timeout_s_(timeout_s) {}

void MeasureSession::ensure_problem() {
  if (problem_ready_ && worker_.alive()) return;
  // Setting up allocates the inputs and runs the reference GEMM: allow for large problems.
  auto reply =
      worker_.call({{"op", "problem"}, {"problem", problem_.key()}, {"seed", seed_}}, std::max(timeout_s_, 600.0));
  GF_CHECK(reply.value("ok", false), "worker could not set up {}: {}", problem_.key(), reply.value("error", ""));
  problem_ready_ = true;
}

Measurement MeasureSession::measure(const Candidate& candidate, bool time) {
  ensure_problem();
  Measurement m;
  m.problem = problem_.key();
  m.backend = candidate.backend;
  m.candidate = candidate.name;
  m.config = candidate.config;
  auto reply = worker_.call({{"op", "measure"}, {"candidate", candidate}, {"time", time}}, timeout_s_);
  if (reply.value("crashed", false) || reply.value("fatal", false)) problem_ready_ = false;
  if (!reply.value("ok", false)) {
    m.error = reply.value("error", "unknown worker error");
    return m;
  }
  m.verified = reply.value("verified", false);
  m.rel_err = reply.value("rel_err", -1.0);
  m.error = reply.value("error", "");
  m.us = reply.value("us", 0.0);
  m.tflops = m.us > 0 ? problem_.flops() / (m.us * 1e6) : 0.0;
  return m;
}

}  // namespace gf::tune

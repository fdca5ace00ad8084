#pragma once
// Measures candidates of one problem in a worker process, restarting the worker (and setting the
// problem up again) whenever a candidate crashes it or hangs. The worker is the tuner's, kept
// across its problems: each new process pays for a CUDA context and library handles again.
#include <string>
#include <vector>

#include "gemmforge/backend.hpp"
#include "gemmforge/tuning_db.hpp"
#include "process/worker_process.hpp"

namespace gf::tune {

class MeasureSession {
 public:
  // family and key name the problem (GemmProblem::kFamily and key()); the session sets it up in
  // the worker at its first measurement. hold > 1: this session's problem is one of `hold`
  // problems whose sessions take turns on the worker, which keeps them all set up; each
  // measurement makes the session's problem the worker's current one first.
  MeasureSession(WorkerProcess& worker, std::string_view family, std::string key, uint64_t seed, double timeout_s,
                 int hold = 1);
  // Verifies and (if `time`) times the candidate. Never throws for a bad candidate: the
  // Measurement carries the error. Its rate is left for the caller, who knows the problem.
  // graph: also time it back to back in a CUDA graph (Measurement::graph_us).
  Measurement measure(const Candidate& candidate, bool time = true, bool graph = false);
  // Times candidates that measure() verified against each other in one race (Timer::race): their
  // Measurements in order, or, when the race itself fails (a kernel faulted or hung the worker),
  // nothing, so that the caller measures them one by one.
  std::vector<Measurement> race(const std::vector<Candidate>& candidates, int rounds);

 private:
  void ensure_problem();
  WorkerProcess& worker_;
  std::string family_, key_;
  uint64_t seed_;
  double timeout_s_;
  int hold_;
  bool problem_ready_ = false;
};

}  // namespace gf::tune

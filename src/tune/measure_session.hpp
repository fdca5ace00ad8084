#pragma once
// Measures candidates of one problem in a worker process, restarting the worker (and setting the
// problem up again) whenever a candidate crashes it or hangs.
#include <memory>
#include <string>

#include "gemmforge/backend.hpp"
#include "gemmforge/tuning_db.hpp"
#include "process/worker_process.hpp"

namespace gf::tune {

class MeasureSession {
 public:
  MeasureSession(const std::string& worker_exe, const GemmProblem& problem, uint64_t seed, double timeout_s);
  // Verifies and (if `time`) times the candidate. Never throws for a bad candidate: the
  // Measurement carries the error.
  Measurement measure(const Candidate& candidate, bool time = true);

 private:
  void ensure_problem();
  WorkerProcess worker_;
  GemmProblem problem_;
  uint64_t seed_;
  double timeout_s_;
  bool problem_ready_ = false;
};

}  // namespace gf::tune

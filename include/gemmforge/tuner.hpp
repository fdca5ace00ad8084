#pragma once
// The tuner: candidates from every enabled backend -> compile (in parallel, no GPU needed) ->
// verify against the reference and time, in a worker process -> choose -> store.
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gemmforge/backend.hpp"
#include "gemmforge/tuning_db.hpp"

namespace gf {

struct TuneOptions {
  std::vector<std::string> backends;  // empty: every available backend
  SearchOptions search;
  bool force = false;               // tune again even when the DB has a decision
  // Only candidates whose names contain one of these comma-separated texts, to study a few
  // variants; the DB is neither read nor written, since the winner of a cut space is no decision.
  std::string only;
  double candidate_timeout_s = 60;  // per candidate (build, verify, time) in the worker
  int compile_jobs = 0;             // parallel compiles; 0: one per core
  std::filesystem::path db_path;    // empty: TuningDb::default_path()
  std::string worker_exe;           // empty: this program (/proc/self/exe)
  uint64_t seed = 0;                // input data seed; 0: fresh each run
  int bench_rounds = 3;             // bench: interleaved rounds, each row keeping its median (odd)
  // Called as work advances: (what, done, total).
  std::function<void(const std::string&, int, int)> progress;
};

struct TuneResult {
  GemmProblem problem;
  Decision decision;
  std::vector<Measurement> measurements;       // every candidate, failed ones with their error
  std::map<std::string, std::string> skipped;  // backend -> why it offered nothing
  bool from_db = false;
  double seconds = 0;
};

// One row of `gemmforge bench`: a backend's best kernel re-timed beside the others in one run.
struct BenchRow {
  std::string backend;  // "cublaslt-default" for cuBLASLt's own pick
  Candidate candidate;
  Measurement measurement;  // the median round's
  bool chosen = false;
  std::vector<double> round_us;  // every round's time, in order (0: not verified)
};

class Tuner {
 public:
  explicit Tuner(TuneOptions options);
  ~Tuner();
  // Looks the problem up in the DB, else tunes and stores it. Throws gf::Error when no
  // candidate of any backend passes verification.
  TuneResult tune(const GemmProblem& problem);
  // Tunes if needed, then times the winner, each backend's best and cuBLASLt's default again,
  // side by side in one worker.
  std::vector<BenchRow> bench(const GemmProblem& problem);
  const DeviceInfo& device() const;
  TuningDb& db();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gf

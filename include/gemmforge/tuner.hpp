#pragma once
// The tuner, one for every kernel family (GEMMs, row ops): candidates from the family's enabled
// backends -> compile in parallel (no GPU needed) -> verify each against the reference, in a worker
// process -> time them against each other in a race, then the close contenders in a longer one
// -> choose -> store.
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gemmforge/backend.hpp"
#include "gemmforge/tuning_db.hpp"

namespace gf {

struct TuneOptions {
  std::vector<std::string> backends;  // empty: every available backend of each family
  SearchOptions search;
  bool force = false;     // tune again even when the DB has a decision
  bool use_cache = true;  // false: compile every candidate afresh, over what the kernel cache holds
  // Only candidates whose names contain one of these comma-separated texts, to study a few
  // variants; the DB is neither read nor written, since the winner of a cut space is no decision.
  std::string only;
  double candidate_timeout_s = 60;  // per candidate (build, verify, time) in the worker
  int compile_jobs = 0;             // parallel compiles; 0: one per core
  std::filesystem::path db_path;    // a path or a redis:// URL; empty: GEMMFORGE_DB, else TuningDb::default_path()
  std::string worker_exe;           // empty: this program (/proc/self/exe)
  uint64_t seed = 0;                // input data seed; 0: fresh each run
  int bench_rounds = 5;             // bench: interleaved rounds, each row keeping its median (odd)
  bool bench_graph = true;          // bench: also time each row back to back in a CUDA graph
  // Called as work advances: (what, done, total).
  std::function<void(const std::string&, int, int)> progress;
};

struct TuneResult {
  std::string problem;  // the problem's key
  Decision decision;
  std::vector<Measurement> measurements;       // every candidate, failed ones with their error
  std::map<std::string, std::string> skipped;  // backend -> why it offered nothing
  bool from_db = false;
  double seconds = 0;
  // Where the seconds went (wall time; 0 for a decision from the DB): listing and compiling the candidates,
  // verifying each in the worker (with the worker's setup), and the races.
  double compile_seconds = 0, verify_seconds = 0, race_seconds = 0;
  // The close contenders of long kernels timed alone after the final race (candidate id -> median
  // us, the mean of two timings): their measurements carry these times, the others are rescaled.
  std::map<std::string, double> alone_us;
};

// One row of a bench: a backend's best kernel timed again beside the others in one run.
struct BenchRow {
  std::string backend;  // also "cublaslt-default" (cuBLASLt's own pick) and "eager" (unfused)
  Candidate candidate;
  Measurement measurement;  // the median round's
  bool chosen = false;
  std::vector<double> round_us;        // every round's time, in order (0: not verified)
  std::vector<double> round_graph_us;  // the same in graph mode
};

struct BenchResult {
  TuneResult tuned;            // the decision the rows were timed under
  std::vector<BenchRow> rows;  // each backend's best, then the baselines
};

class Tuner {
 public:
  explicit Tuner(TuneOptions options);
  ~Tuner();
  // Looks the problem up in the DB, else tunes and stores it. A stored decision counts when its
  // backend's version is still the one that chose it, it considered every backend now enabled,
  // and it was tuned at this search level or a wider one. Throws gf::Error when no candidate of
  // any backend passes verification.
  TuneResult tune(const GemmProblem& problem);
  TuneResult tune(const RowOpSpec& problem);
  // Starts listing and compiling the problem's candidates in the background (unless its stored
  // decision stands), so that tune(problem) later finds them compiled: a caller with several
  // problems prefetches them all, in the order it will tune them, before tuning the first: their
  // compiles queue in that order on the tuner's compile threads, so the cores stay busy and
  // compiling overlaps measuring.
  void prefetch(const GemmProblem& problem);
  void prefetch(const RowOpSpec& problem);
  // Tunes if needed, then times the winner, each backend's best and the family's baselines
  // (GEMMs: cuBLASLt's own pick and the eager plan) again, side by side in interleaved rounds.
  BenchResult bench(const GemmProblem& problem);
  BenchResult bench(const RowOpSpec& problem);
  // The same for a group of problems timed in the same rounds, each round's kernels of every
  // problem in one shuffled order (the worker keeps them all set up): a fused GEMM beside its
  // plain one, compared round by round under the same clocks. Results in the problems' order.
  std::vector<BenchResult> bench(const std::vector<GemmProblem>& problems);
  // Device-to-device copy bandwidth measured in a worker: bytes read + written, TB/s.
  double copy_bandwidth_tbps();
  // A copy moving `bytes` (half read, half written) timed in a worker as the bench times a kernel:
  // {single-launch us, graph-mode us per launch}. The ceiling of a memory-bound kernel of those bytes.
  std::pair<double, double> copy_us(size_t bytes);
  const DeviceInfo& device() const;
  TuningDb& db();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gf

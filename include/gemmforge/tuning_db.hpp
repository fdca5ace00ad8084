#pragma once
// The tuning database (SQLite, WAL): every measured candidate, and per problem and device the
// chosen one. Safe to share between processes. The file carries its schema version; one written
// by an older gemmforge is emptied (its decisions are tuned again), a newer or foreign one is
// refused with the file's name and what to do.
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gf {

// One candidate measured on one problem.
struct Measurement {
  std::string problem;  // the problem's key (GemmProblem::key(), RowOpSpec::key())
  std::string backend;
  std::string candidate;  // the candidate's name
  nlohmann::json config;
  bool verified = false;
  double us = 0;    // median microseconds, L2 flushed before each launch; 0 when not timed
  double rate = 0;  // TFLOP/s for GEMMs, TB/s (bytes read + written) for row ops
  double graph_us = 0;  // per launch, back to back in a CUDA graph (bench only; not stored)
  double rel_err = -1;
  double compile_seconds = 0;
  std::string error;  // why it failed, "" when it ran and verified
};

struct Decision {
  std::string problem;
  std::string family;  // "gemm", "rowop"
  std::string backend;
  std::string backend_version;  // the chosen backend's version when it won: valid while it still is
  std::string candidate;
  nlohmann::json config;
  double us = 0;
  double rate = 0;
  std::string search;  // the search level it was tuned at: fast, default, exhaustive
  int candidates = 0;  // candidates measured
  std::vector<std::string> backends_considered;
  std::string tuned_at;  // UTC, ISO 8601
};

class TuningDb {
 public:
  static constexpr int kSchemaVersion = 2;

  // Opens (creating) the database; device is the fingerprint all reads and writes are keyed by.
  // Throws gf::Error naming the file and a remedy when it is damaged, foreign or newer.
  TuningDb(const std::filesystem::path& path, std::string device);
  ~TuningDb();
  TuningDb(const TuningDb&) = delete;
  TuningDb& operator=(const TuningDb&) = delete;

  // The default database: home_dir()/tuning.db.
  static std::filesystem::path default_path();

  // The problem's decision on this device, if one is stored and readable (a damaged row is
  // skipped with a warning naming it, as if absent).
  std::optional<Decision> decision(const std::string& problem) const;
  // Replaces the problem's decision and measurements in one transaction.
  void store(const Decision& decision, const std::vector<Measurement>& measurements);
  std::vector<Measurement> measurements(const std::string& problem) const;
  // Every readable decision of every device, with its device fingerprint, for `db show` and
  // `db export`.
  nlohmann::json dump() const;
  // dump() wrapped with the export format's version: what `gemmforge db export` writes and a team
  // ships for a GPU and a model.
  static constexpr int kExportVersion = 1;
  nlohmann::json export_json() const;
  // Stores an export's decisions under their own devices, in one transaction, after checking every
  // entry (a damaged, foreign or other-version export is refused whole, with a one-line reason);
  // where the DB already holds a decision for the problem and device, the faster one stays.
  // Returns how many were stored.
  int import_json(const nlohmann::json& exported);
  // Deletes everything (all devices). Returns the number of decisions removed.
  int clear();
  const std::string& device() const { return device_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  struct Handle;
  std::unique_ptr<Handle> db_;
  std::filesystem::path path_;
  std::string device_;
};

}  // namespace gf

#pragma once
// The tuning database (SQLite, WAL): every measured candidate, and per problem and device the
// chosen one. Safe to share between processes.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

struct sqlite3;

namespace gf {

// One candidate measured on one problem.
struct Measurement {
  std::string problem;  // GemmProblem::key()
  std::string backend;
  std::string candidate;  // the candidate's name
  nlohmann::json config;
  bool verified = false;
  double us = 0;  // median microseconds; 0 when not timed
  double tflops = 0;
  double rel_err = -1;
  double compile_seconds = 0;
  std::string error;  // why it failed, "" when it ran and verified
};

struct Decision {
  std::string problem;
  std::string backend;
  std::string candidate;
  nlohmann::json config;
  double us = 0;
  double tflops = 0;
  std::vector<std::string> backends_considered;
  std::string tuned_at;  // UTC, ISO 8601
};

class TuningDb {
 public:
  // Opens (creating) the database; device is the fingerprint all reads and writes are keyed by.
  TuningDb(const std::filesystem::path& path, std::string device);
  ~TuningDb();
  TuningDb(const TuningDb&) = delete;
  TuningDb& operator=(const TuningDb&) = delete;

  // The default database: home_dir()/tuning.db.
  static std::filesystem::path default_path();

  std::optional<Decision> decision(const std::string& problem) const;
  // Replaces the problem's decision and measurements in one transaction.
  void store(const Decision& decision, const std::vector<Measurement>& measurements);
  std::vector<Measurement> measurements(const std::string& problem) const;
  // Every decision of every device, with its device fingerprint, for `db show` and `db export`.
  nlohmann::json dump() const;
  // Deletes everything (all devices). Returns the number of decisions removed.
  int clear();
  const std::string& device() const { return device_; }

 private:
  sqlite3* db_ = nullptr;
  std::string device_;
};

}  // namespace gf

#pragma once
// The tuning database (SQLite, WAL): every measured candidate, and per problem and device the
// chosen one. Safe to share between processes. The file carries its schema version; one written
// by an older gemmforge is emptied (its decisions are tuned again), a newer or foreign one is
// refused with the file's name and what to do.
//
// For a fleet, two more stores may sit around the local file (StoreOptions):
//   - a remote store (Redis) shared by many hosts, behind the local DB as a read-through cache:
//     a lookup reads the local DB, then the remote one (copying a hit into the local DB); a store
//     writes both, the remote one keeping the faster of two decisions. When the server is down or
//     slow, everything goes on with the local DB after one warning;
//   - a read-only system DB under both (a DB a team ships for a GPU and a model, as a SQLite file
//     or a `db export` JSON): consulted last, never written, so the user's decisions win.
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gf {
namespace store {
class RemoteStore;
}

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

  // The search of a decision `gemmforge db pin` stored: a kernel named, not timed (us 0), the
  // faster of any two, and kept on its host.
  static constexpr std::string_view kPinned = "pinned";
  bool pinned() const { return search == kPinned; }
};

// The stores around the local DB.
struct StoreOptions {
  std::string remote;               // redis://[[USER]:PASSWORD@]HOST[:PORT][/DB], or "" for none
  std::filesystem::path system_db;  // a SQLite file or a `db export` JSON, read only; "" for none
};

class TuningDb {
 public:
  static constexpr int kSchemaVersion = 2;

  // Opens (creating) the database; device is the fingerprint all reads and writes are keyed by.
  // Throws gf::Error naming the file and a remedy when it is damaged, foreign or newer, and for a
  // remote URL that does not parse. A system DB that cannot be read is left out with a warning.
  TuningDb(const std::filesystem::path& path, std::string device, const StoreOptions& more = {});
  // The database a command or a runtime uses. `where` is --db's value or the runtimes' db_path; when
  // empty, GEMMFORGE_DB's. It is a path, or a redis:// URL: that remote store behind the local DB
  // at default_path(). GEMMFORGE_SYSTEM_DB names the system DB.
  static std::unique_ptr<TuningDb> open(const std::string& where, std::string device);
  // The local file open(where) uses.
  static std::filesystem::path local_path(const std::string& where);
  ~TuningDb();
  TuningDb(const TuningDb&) = delete;
  TuningDb& operator=(const TuningDb&) = delete;

  // The default database: home_dir()/tuning.db.
  static std::filesystem::path default_path();

  // The problem's decision on this device, if one is stored and readable (a damaged row is
  // skipped with a warning naming it, as if absent): the local DB's, else the remote store's
  // (then copied into the local DB with its measurements), else the system DB's.
  std::optional<Decision> decision(const std::string& problem) const;
  // Replaces the problem's decision and measurements in the local DB in one transaction, and
  // offers them to the remote store (which keeps the faster of its own and these).
  void store(const Decision& decision, const std::vector<Measurement>& measurements);
  // The local DB's measurements of the problem, else the system DB's.
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
  // where the DB already holds a decision for the problem and device, the faster one stays. The
  // remote store, where there is one, is offered each of them too. Returns how many the local DB
  // stored.
  int import_json(const nlohmann::json& exported);
  // Deletes everything (all devices) of the local DB. Returns the number of decisions removed.
  int clear();
  const std::string& device() const { return device_; }
  const std::filesystem::path& path() const { return path_; }
  // The local path, and the remote store's URL (its password redacted) and the system DB's path
  // where there are those: for messages.
  std::string describe() const;

 private:
  struct ReadOnly {};
  TuningDb(const std::filesystem::path& path, std::string device, ReadOnly);
  struct Handle;
  std::unique_ptr<Handle> db_;
  std::filesystem::path path_;
  std::string device_;
  std::unique_ptr<store::RemoteStore> remote_;
  std::unique_ptr<TuningDb> system_;
};

}  // namespace gf

#include "gemmforge/tuning_db.hpp"

#include <sqlite3.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>

#include "core/log.hpp"
#include "core/strings.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/paths.hpp"
#include "store/decision_json.hpp"
#include "store/kernel_cache.hpp"
#include "store/remote_store.hpp"

namespace gf {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS decisions (
  problem TEXT NOT NULL, device TEXT NOT NULL, family TEXT NOT NULL, backend TEXT NOT NULL,
  backend_version TEXT NOT NULL, candidate TEXT NOT NULL, config TEXT NOT NULL, us REAL NOT NULL,
  rate REAL NOT NULL, search TEXT NOT NULL, candidates INTEGER NOT NULL, backends TEXT NOT NULL,
  tuned_at TEXT NOT NULL, PRIMARY KEY (problem, device));
CREATE TABLE IF NOT EXISTS measurements (
  problem TEXT NOT NULL, device TEXT NOT NULL, backend TEXT NOT NULL, candidate TEXT NOT NULL,
  config TEXT NOT NULL, verified INTEGER NOT NULL, us REAL NOT NULL, rate REAL NOT NULL,
  rel_err REAL NOT NULL, compile_seconds REAL NOT NULL, error TEXT NOT NULL,
  PRIMARY KEY (problem, device, backend, candidate));
)sql";

constexpr const char* kDecisionColumns =
    "problem, device, family, backend, backend_version, candidate, config, us, rate, search, candidates, backends, "
    "tuned_at";

// A prepared statement that binds by position and finalizes itself.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    GF_CHECK(sqlite3_prepare_v2(db, sql, -1, &st_, nullptr) == SQLITE_OK, "sqlite prepare failed: {} ({})",
             quote(sqlite3_errmsg(db), 160), sql);
  }
  ~Statement() { sqlite3_finalize(st_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  template <class... Args>
  Statement& bind(const Args&... args) {
    int i = 0;
    (bind_one(++i, args), ...);
    return *this;
  }
  // Steps once; true while a row is available.
  bool step() {
    int rc = sqlite3_step(st_);
    GF_CHECK(rc == SQLITE_ROW || rc == SQLITE_DONE, "sqlite step failed: {}", quote(sqlite3_errmsg(db_), 160));
    return rc == SQLITE_ROW;
  }
  std::string text(int col) const {
    auto p = sqlite3_column_text(st_, col);
    return p ? reinterpret_cast<const char*>(p) : "";
  }
  double real(int col) const { return sqlite3_column_double(st_, col); }
  int64_t integer(int col) const { return sqlite3_column_int64(st_, col); }

 private:
  void bind_one(int i, const std::string& v) { sqlite3_bind_text(st_, i, v.c_str(), int(v.size()), SQLITE_TRANSIENT); }
  void bind_one(int i, const char* v) { sqlite3_bind_text(st_, i, v, -1, SQLITE_TRANSIENT); }
  void bind_one(int i, double v) { sqlite3_bind_double(st_, i, v); }
  void bind_one(int i, int64_t v) { sqlite3_bind_int64(st_, i, v); }
  void bind_one(int i, int v) { sqlite3_bind_int(st_, i, v); }
  void bind_one(int i, bool v) { sqlite3_bind_int(st_, i, v ? 1 : 0); }
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
};

int exec_rc(sqlite3* db, const char* sql, std::string* error = nullptr) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  if (error) *error = err ? err : sqlite3_errmsg(db);
  sqlite3_free(err);
  return rc;
}

void exec(sqlite3* db, const char* sql) {
  std::string msg;
  GF_CHECK(exec_rc(db, sql, &msg) == SQLITE_OK, "sqlite: {} ({})", msg, sql);
}

std::string now_utc() {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string join(const std::vector<std::string>& v) { return fmt::format("{}", fmt::join(v, ",")); }

// A row's JSON column, or nullopt (and a warning naming the row) when it does not parse: one
// damaged row costs its problem a re-tune, not the whole DB.
std::optional<nlohmann::json> json_column(const std::string& text, const std::string& what) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded()) return j;
  log().warn("tuning DB: skipping {} (its config is not valid JSON)", what);
  return std::nullopt;
}

// The decision columns (kDecisionColumns order) of st's current row.
std::optional<Decision> decision_of(const Statement& st) {
  Decision d;
  d.problem = st.text(0);
  d.family = st.text(2);
  d.backend = st.text(3);
  d.backend_version = st.text(4);
  d.candidate = st.text(5);
  auto config = json_column(st.text(6), fmt::format("the decision for {} on {}", quote(d.problem), st.text(1)));
  if (!config) return std::nullopt;
  d.config = std::move(*config);
  d.us = st.real(7);
  d.rate = st.real(8);
  d.search = st.text(9);
  d.candidates = int(st.integer(10));
  d.backends_considered = split_list(st.text(11));
  d.tuned_at = st.text(12);
  return d;
}

}  // namespace

struct TuningDb::Handle {
  sqlite3* db = nullptr;
  // One transaction at a time on the connection: threads share a TuningDb (a runtime building
  // several problems at once fills its cache from the remote store), and a second BEGIN on one
  // connection fails instead of waiting.
  std::mutex transaction;
  ~Handle() { sqlite3_close(db); }
};

TuningDb::TuningDb(const std::filesystem::path& path, std::string device, const StoreOptions& more)
    : db_(std::make_unique<Handle>()), path_(path), device_(std::move(device)) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  const int rc = sqlite3_open_v2(path.c_str(), &db_->db,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  GF_CHECK(rc == SQLITE_OK, "cannot open tuning DB {}: {}", path.string(),
           db_->db ? sqlite3_errmsg(db_->db) : "out of memory");
  sqlite3* db = db_->db;
  sqlite3_busy_timeout(db, 10000);  // other processes may hold the write lock briefly
  auto damaged = [&](const std::string& why) {
    GF_FAIL(
        "tuning DB {} is damaged or not a gemmforge DB ({}): move it away, or delete it with gemmforge db clear "
        "--db {}",
        path.string(), quote(why, 160), path.string());
  };
  // The switch to WAL can fail BUSY at once, without the busy handler, while other connections
  // open the same new file (CI: four threads, "database is locked"): retry it within the timeout.
  std::string why;
  int wal = SQLITE_BUSY;
  for (int tries = 0; tries <= 1000 && wal == SQLITE_BUSY; ++tries) {
    wal = exec_rc(db, "PRAGMA journal_mode=WAL;", &why);
    if (wal == SQLITE_BUSY) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (wal == SQLITE_NOTADB || wal == SQLITE_CORRUPT) damaged(why);
  GF_CHECK(wal == SQLITE_OK, "tuning DB {}: {}", path.string(), why);
  exec(db, "PRAGMA synchronous=NORMAL;");

  // The schema: created in an empty file; a file of the older unversioned schema is emptied.
  exec(db, "BEGIN IMMEDIATE;");
  try {
    // Each query's statement ends before the schema changes (an open one locks its table).
    auto count = [&](const char* sql) {
      Statement st(db, sql);
      st.step();
      return st.integer(0);
    };
    const int64_t found = count("PRAGMA user_version");
    const bool empty = count("SELECT count(*) FROM sqlite_master WHERE type = 'table'") == 0;
    if (found > kSchemaVersion)
      GF_FAIL("tuning DB {} has schema {}, newer than this gemmforge's {}: use a newer gemmforge, or another --db",
              path.string(), found, kSchemaVersion);
    if (found == 0 && !empty) {
      if (count("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'decisions'") == 0)
        damaged("it holds tables but no gemmforge schema");
      log().warn(
          "tuning DB {} was written by an older gemmforge (schema 1): its decisions are dropped and will be "
          "tuned again",
          path.string());
      exec(db, "DROP TABLE IF EXISTS decisions; DROP TABLE IF EXISTS measurements;");
    }
    if (found < kSchemaVersion) {
      exec(db, kSchema);
      exec(db, fmt::format("PRAGMA user_version = {};", kSchemaVersion).c_str());
    }
    exec(db, "COMMIT;");
  } catch (...) {
    exec_rc(db, "ROLLBACK;");
    throw;
  }
  if (!more.remote.empty()) {
    remote_ = std::make_unique<store::RemoteStore>(more.remote);
    KernelCache::shared().share_through(more.remote);  // kernels travel with the decisions
  }
  if (!more.system_db.empty()) {
    // The system DB is an extra: one that cannot be read is left out, never the end of tuning.
    try {
      if (more.system_db.extension() == ".json") {
        std::ifstream in(more.system_db);
        GF_CHECK(in.good(), "cannot read it");
        auto exported = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
        GF_CHECK(!exported.is_discarded(), "it is not JSON");
        system_ = std::make_unique<TuningDb>(":memory:", device_);
        system_->import_json(exported);
      } else {
        system_.reset(new TuningDb(more.system_db, device_, ReadOnly{}));
      }
    } catch (const Error& e) {
      system_.reset();
      log().warn("system tuning DB {}: {}; going on without it", more.system_db.string(), e.what());
    }
  }
}

// A shipped DB, opened so that nothing is written to it or beside it: immutable (no locks, no
// -shm or -wal file, which a read-only directory could not hold), and only of this schema.
TuningDb::TuningDb(const std::filesystem::path& path, std::string device, ReadOnly)
    : db_(std::make_unique<Handle>()), path_(path), device_(std::move(device)) {
  GF_CHECK(std::filesystem::is_regular_file(path), "no such file");
  std::string uri = "file:";
  for (char c : path.string()) uri += c == '?' ? "%3f" : c == '#' ? "%23" : c == '%' ? "%25" : std::string(1, c);
  uri += "?immutable=1";
  const int rc = sqlite3_open_v2(uri.c_str(), &db_->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_FULLMUTEX,
                                 nullptr);
  GF_CHECK(rc == SQLITE_OK, "cannot open it: {}", db_->db ? sqlite3_errmsg(db_->db) : "out of memory");
  int64_t version = -1;
  if (sqlite3_stmt* st = nullptr; sqlite3_prepare_v2(db_->db, "PRAGMA user_version", -1, &st, nullptr) == SQLITE_OK) {
    if (sqlite3_step(st) == SQLITE_ROW) version = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
  }
  GF_CHECK(version == kSchemaVersion,
           "it is not a gemmforge DB of schema {} ({}); ship a `gemmforge db export` JSON instead", kSchemaVersion,
           version < 0 ? sqlite3_errmsg(db_->db) : fmt::format("schema {}", version));
}

TuningDb::~TuningDb() = default;

std::filesystem::path TuningDb::default_path() { return home_dir() / "tuning.db"; }

namespace {

// The decision and its measurements under `device`, replacing what the problem had there; inside
// the caller's transaction.
void write(sqlite3* db, const std::string& device, const Decision& d, const std::vector<Measurement>& measurements) {
  Statement(db, "DELETE FROM measurements WHERE problem = ? AND device = ?").bind(d.problem, device).step();
  for (const Measurement& m : measurements) {
    Statement(db,
              "INSERT OR REPLACE INTO measurements (problem, device, backend, candidate, config, verified, us, "
              "rate, rel_err, compile_seconds, error) VALUES (?,?,?,?,?,?,?,?,?,?,?)")
        .bind(m.problem, device, m.backend, m.candidate, m.config.dump(), m.verified, m.us, m.rate, m.rel_err,
              m.compile_seconds, m.error)
        .step();
  }
  Statement(db,
            fmt::format("INSERT OR REPLACE INTO decisions ({}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)", kDecisionColumns)
                .c_str())
      .bind(d.problem, device, d.family, d.backend, d.backend_version, d.candidate, d.config.dump(), d.us, d.rate,
            d.search, d.candidates, join(d.backends_considered), d.tuned_at.empty() ? now_utc() : d.tuned_at)
      .step();
}

template <class F>
void in_transaction(sqlite3* db, std::mutex& one_at_a_time, F&& body) {
  std::lock_guard lock(one_at_a_time);
  exec(db, "BEGIN IMMEDIATE;");
  try {
    body();
    exec(db, "COMMIT;");
  } catch (...) {
    exec_rc(db, "ROLLBACK;");
    throw;
  }
}

// One exported decision, checked field by field: a damaged or foreign entry is refused, never stored.
std::pair<std::string, Decision> imported(const nlohmann::json& e, size_t index) {
  try {
    return store::decision_from_json(e);
  } catch (const Error& err) {
    GF_FAIL("entry {} of the export: {}", index, err.what());
  }
}

}  // namespace

std::optional<Decision> TuningDb::decision(const std::string& problem) const {
  {
    Statement st(db_->db,
                 fmt::format("SELECT {} FROM decisions WHERE problem = ? AND device = ?", kDecisionColumns).c_str());
    st.bind(problem, device_);
    if (st.step())
      if (auto d = decision_of(st)) return d;
  }
  if (remote_)
    if (auto e = remote_->get(device_, problem)) {
      // Read-through: the next lookup, and `bench`'s measurements, need no server.
      in_transaction(db_->db, db_->transaction, [&] { write(db_->db, device_, e->decision, e->measurements); });
      return std::move(e->decision);
    }
  if (system_) return system_->decision(problem);
  return std::nullopt;
}

void TuningDb::store(const Decision& d, const std::vector<Measurement>& measurements) {
  Decision stamped = d;
  if (stamped.tuned_at.empty()) stamped.tuned_at = now_utc();  // one time in both stores
  in_transaction(db_->db, db_->transaction, [&] { write(db_->db, device_, stamped, measurements); });
  if (remote_ && !stamped.pinned()) remote_->put(device_, stamped, measurements);  // a pin is this host's
}

nlohmann::json TuningDb::export_json() const {
  return {{"gemmforge_tuning_export", kExportVersion}, {"decisions", dump()}};
}

int TuningDb::import_json(const nlohmann::json& exported) {
  GF_CHECK(exported.is_object() && exported.contains("gemmforge_tuning_export"),
           "not a gemmforge tuning export (no \"gemmforge_tuning_export\" version)");
  GF_CHECK(exported["gemmforge_tuning_export"] == kExportVersion && exported.contains("decisions") &&
               exported["decisions"].is_array(),
           "tuning export version {} is not {}, which this gemmforge reads", exported["gemmforge_tuning_export"].dump(),
           kExportVersion);
  std::vector<std::pair<std::string, Decision>> entries;
  const auto& list = exported["decisions"];
  for (size_t i = 0; i < list.size(); ++i) entries.push_back(imported(list[i], i));  // all checked before any write
  int stored = 0;
  in_transaction(db_->db, db_->transaction, [&] {
    for (const auto& [device, d] : entries) {
      // Where the DB already has a decision for the problem and device, the faster one stays; a
      // pin (no time) is the faster of any two.
      Statement st(db_->db, "SELECT us, search FROM decisions WHERE problem = ? AND device = ?");
      st.bind(d.problem, device);
      if (st.step() && (st.text(1) == Decision::kPinned || (st.real(0) > 0 && st.real(0) <= d.us))) continue;
      write(db_->db, device, d, {});
      ++stored;
    }
  });
  if (remote_)
    for (const auto& [device, d] : entries)
      if (!d.pinned()) remote_->put(device, d, {});  // a pin is its host's
  return stored;
}

std::vector<Measurement> TuningDb::measurements(const std::string& problem) const {
  Statement st(db_->db,
               "SELECT backend, candidate, config, verified, us, rate, rel_err, compile_seconds, error "
               "FROM measurements WHERE problem = ? AND device = ? ORDER BY verified DESC, us ASC");
  st.bind(problem, device_);
  std::vector<Measurement> out;
  while (st.step()) {
    Measurement m;
    m.problem = problem;
    m.backend = st.text(0);
    m.candidate = st.text(1);
    auto config = json_column(st.text(2), fmt::format("the measurement of {} on {}", m.candidate, quote(problem)));
    if (!config) continue;
    m.config = std::move(*config);
    m.verified = st.integer(3) != 0;
    m.us = st.real(4);
    m.rate = st.real(5);
    m.rel_err = st.real(6);
    m.compile_seconds = st.real(7);
    m.error = st.text(8);
    out.push_back(std::move(m));
  }
  if (out.empty() && system_) return system_->measurements(problem);
  return out;
}

nlohmann::json TuningDb::dump() const {
  Statement st(db_->db, fmt::format("SELECT {} FROM decisions ORDER BY device, problem", kDecisionColumns).c_str());
  nlohmann::json out = nlohmann::json::array();
  while (st.step()) {
    auto d = decision_of(st);
    if (!d) continue;
    out.push_back(store::decision_json(*d, st.text(1)));
  }
  return out;
}

int TuningDb::clear() {
  sqlite3* db = db_->db;
  // The write lock first: a read (the count) still open when asking for it would fail at once
  // with "database is locked" instead of waiting for other writers.
  std::lock_guard lock(db_->transaction);
  exec(db, "BEGIN IMMEDIATE;");
  try {
    int n = 0;
    {
      Statement count(db, "SELECT COUNT(*) FROM decisions");
      count.step();
      n = int(count.integer(0));
    }
    exec(db, "DELETE FROM decisions; DELETE FROM measurements; COMMIT;");
    return n;
  } catch (...) {
    exec_rc(db, "ROLLBACK;");
    throw;
  }
}

}  // namespace gf

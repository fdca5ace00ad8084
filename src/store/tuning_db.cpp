#include "gemmforge/tuning_db.hpp"

#include <sqlite3.h>

#include <chrono>
#include <thread>

#include "core/strings.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/paths.hpp"

namespace gf {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS decisions (
  problem TEXT NOT NULL, device TEXT NOT NULL, backend TEXT NOT NULL, candidate TEXT NOT NULL,
  config TEXT NOT NULL, us REAL NOT NULL, tflops REAL NOT NULL, backends TEXT NOT NULL,
  tuned_at TEXT NOT NULL, PRIMARY KEY (problem, device));
CREATE TABLE IF NOT EXISTS measurements (
  problem TEXT NOT NULL, device TEXT NOT NULL, backend TEXT NOT NULL, candidate TEXT NOT NULL,
  config TEXT NOT NULL, verified INTEGER NOT NULL, us REAL NOT NULL, tflops REAL NOT NULL,
  rel_err REAL NOT NULL, compile_seconds REAL NOT NULL, error TEXT NOT NULL,
  PRIMARY KEY (problem, device, backend, candidate));
)sql";

// A prepared statement that binds by position and finalizes itself.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    GF_CHECK(sqlite3_prepare_v2(db, sql, -1, &st_, nullptr) == SQLITE_OK, "sqlite prepare failed: {} ({})",
             sqlite3_errmsg(db), sql);
  }
  ~Statement() { sqlite3_finalize(st_); }
  template <class... Args>
  Statement& bind(const Args&... args) {
    int i = 0;
    (bind_one(++i, args), ...);
    return *this;
  }
  // Steps once; true while a row is available.
  bool step() {
    int rc = sqlite3_step(st_);
    GF_CHECK(rc == SQLITE_ROW || rc == SQLITE_DONE, "sqlite step failed: {}", sqlite3_errmsg(db_));
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

void exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  std::string msg = err ? err : "";
  sqlite3_free(err);
  GF_CHECK(rc == SQLITE_OK, "sqlite: {} ({})", msg, sql);
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

}  // namespace

TuningDb::TuningDb(const std::filesystem::path& path, std::string device) : device_(std::move(device)) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  int rc =
      sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    GF_FAIL("cannot open tuning DB {}: {}", path.string(), msg);
  }
  sqlite3_busy_timeout(db_, 10000);  // other processes may hold the write lock briefly
  // The switch to WAL can fail BUSY at once, without the busy handler, while other connections
  // open the same new file (CI: four threads, "database is locked"): retry it within the timeout.
  int wal = SQLITE_BUSY;
  for (int tries = 0; tries <= 1000; ++tries) {
    wal = sqlite3_exec(db_, "PRAGMA journal_mode=WAL;", nullptr, nullptr, nullptr);
    if (wal != SQLITE_BUSY) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (wal != SQLITE_OK) exec(db_, "PRAGMA journal_mode=WAL;");  // once more, for its error message
  exec(db_, "PRAGMA synchronous=NORMAL;");
  exec(db_, kSchema);
}

TuningDb::~TuningDb() { sqlite3_close(db_); }

std::filesystem::path TuningDb::default_path() { return home_dir() / "tuning.db"; }

std::optional<Decision> TuningDb::decision(const std::string& problem) const {
  Statement st(db_,
               "SELECT backend, candidate, config, us, tflops, backends, tuned_at FROM decisions "
               "WHERE problem = ? AND device = ?");
  st.bind(problem, device_);
  if (!st.step()) return std::nullopt;
  Decision d;
  d.problem = problem;
  d.backend = st.text(0);
  d.candidate = st.text(1);
  d.config = nlohmann::json::parse(st.text(2));
  d.us = st.real(3);
  d.tflops = st.real(4);
  d.backends_considered = split_list(st.text(5));
  d.tuned_at = st.text(6);
  return d;
}

void TuningDb::store(const Decision& d, const std::vector<Measurement>& measurements) {
  exec(db_, "BEGIN IMMEDIATE;");
  try {
    Statement(db_, "DELETE FROM measurements WHERE problem = ? AND device = ?").bind(d.problem, device_).step();
    for (const Measurement& m : measurements) {
      Statement(db_,
                "INSERT OR REPLACE INTO measurements (problem, device, backend, candidate, config, verified, us, "
                "tflops, rel_err, compile_seconds, error) VALUES (?,?,?,?,?,?,?,?,?,?,?)")
          .bind(m.problem, device_, m.backend, m.candidate, m.config.dump(), m.verified, m.us, m.tflops, m.rel_err,
                m.compile_seconds, m.error)
          .step();
    }
    Statement(db_,
              "INSERT OR REPLACE INTO decisions (problem, device, backend, candidate, config, us, tflops, backends, "
              "tuned_at) VALUES (?,?,?,?,?,?,?,?,?)")
        .bind(d.problem, device_, d.backend, d.candidate, d.config.dump(), d.us, d.tflops, join(d.backends_considered),
              d.tuned_at.empty() ? now_utc() : d.tuned_at)
        .step();
    exec(db_, "COMMIT;");
  } catch (...) {
    exec(db_, "ROLLBACK;");
    throw;
  }
}

std::vector<Measurement> TuningDb::measurements(const std::string& problem) const {
  Statement st(db_,
               "SELECT backend, candidate, config, verified, us, tflops, rel_err, compile_seconds, error "
               "FROM measurements WHERE problem = ? AND device = ? ORDER BY verified DESC, us ASC");
  st.bind(problem, device_);
  std::vector<Measurement> out;
  while (st.step()) {
    Measurement m;
    m.problem = problem;
    m.backend = st.text(0);
    m.candidate = st.text(1);
    m.config = nlohmann::json::parse(st.text(2));
    m.verified = st.integer(3) != 0;
    m.us = st.real(4);
    m.tflops = st.real(5);
    m.rel_err = st.real(6);
    m.compile_seconds = st.real(7);
    m.error = st.text(8);
    out.push_back(std::move(m));
  }
  return out;
}

nlohmann::json TuningDb::dump() const {
  Statement st(db_,
               "SELECT problem, device, backend, candidate, config, us, tflops, backends, tuned_at FROM decisions "
               "ORDER BY device, problem");
  nlohmann::json out = nlohmann::json::array();
  while (st.step()) {
    out.push_back({{"problem", st.text(0)},
                   {"device", st.text(1)},
                   {"backend", st.text(2)},
                   {"candidate", st.text(3)},
                   {"config", nlohmann::json::parse(st.text(4))},
                   {"us", st.real(5)},
                   {"tflops", st.real(6)},
                   {"backends_considered", split_list(st.text(7))},
                   {"tuned_at", st.text(8)}});
  }
  return out;
}

int TuningDb::clear() {
  Statement count(db_, "SELECT COUNT(*) FROM decisions");
  count.step();
  int n = int(count.integer(0));
  exec(db_, "BEGIN IMMEDIATE; DELETE FROM decisions; DELETE FROM measurements; COMMIT;");
  return n;
}

}  // namespace gf

#include "gemmforge/tuning_db.hpp"

#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <thread>

#include "core/log.hpp"
#include "core/strings.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/paths.hpp"
#include "gemmforge/problem.hpp"
#include "gemmforge/rowop.hpp"

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
  ~Handle() { sqlite3_close(db); }
};

TuningDb::TuningDb(const std::filesystem::path& path, std::string device)
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
}

TuningDb::~TuningDb() = default;

std::filesystem::path TuningDb::default_path() { return home_dir() / "tuning.db"; }

std::optional<Decision> TuningDb::decision(const std::string& problem) const {
  Statement st(db_->db,
               fmt::format("SELECT {} FROM decisions WHERE problem = ? AND device = ?", kDecisionColumns).c_str());
  st.bind(problem, device_);
  if (!st.step()) return std::nullopt;
  return decision_of(st);
}

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
void in_transaction(sqlite3* db, F&& body) {
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
  auto bad = [&](const std::string& why) { GF_FAIL("entry {} of the export: {}", index, why); };
  if (!e.is_object()) bad("not an object");
  auto text = [&](const char* key) {
    if (!e.contains(key) || !e[key].is_string()) bad(fmt::format("{} is missing or not a string", key));
    return e[key].get<std::string>();
  };
  auto number = [&](const char* key) {
    if (!e.contains(key) || !e[key].is_number() || !std::isfinite(e[key].get<double>()) || e[key].get<double>() < 0)
      bad(fmt::format("{} is missing or not a non-negative number", key));
    return e[key].get<double>();
  };
  Decision d;
  const std::string device = text("device");
  d.problem = text("problem");
  d.family = text("family");
  d.backend = text("backend");
  d.backend_version = text("backend_version");
  d.candidate = text("candidate");
  d.search = text("search");
  d.tuned_at = text("tuned_at");
  d.us = number("us");
  d.rate = number("rate");
  d.candidates = int(number("candidates"));
  if (!e.contains("config") || !e["config"].is_object()) bad("config is missing or not an object");
  d.config = e["config"];
  if (!e.contains("backends_considered") || !e["backends_considered"].is_array()) bad("backends_considered is missing");
  for (const auto& b : e["backends_considered"]) {
    if (!b.is_string()) bad("backends_considered holds a non-string");
    d.backends_considered.push_back(b.get<std::string>());
  }
  if (device.empty() || d.backend.empty() || d.candidate.empty() || !(d.us > 0)) bad("an empty device, backend, candidate or time");
  if (d.search != "fast" && d.search != "default" && d.search != "exhaustive") bad("search " + quote(d.search));
  // The problem must be one this gemmforge reads back as the same key.
  std::string reparsed;
  try {
    if (d.family == "gemm")
      reparsed = GemmProblem::parse(d.problem).key();
    else if (d.family == "rowop")
      reparsed = RowOpSpec::parse(d.problem).key();
    else
      bad("family " + quote(d.family));
  } catch (const Error& err) {
    bad(err.what());
  }
  if (reparsed != d.problem) bad(fmt::format("problem {} is not in its canonical form {}", quote(d.problem), reparsed));
  return {device, std::move(d)};
}

}  // namespace

void TuningDb::store(const Decision& d, const std::vector<Measurement>& measurements) {
  in_transaction(db_->db, [&] { write(db_->db, device_, d, measurements); });
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
  in_transaction(db_->db, [&] {
    for (const auto& [device, d] : entries) {
      // Where the DB already has a decision for the problem and device, the faster one stays.
      Statement st(db_->db, "SELECT us FROM decisions WHERE problem = ? AND device = ?");
      st.bind(d.problem, device);
      if (st.step() && st.real(0) > 0 && st.real(0) <= d.us) continue;
      write(db_->db, device, d, {});
      ++stored;
    }
  });
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
  return out;
}

nlohmann::json TuningDb::dump() const {
  Statement st(db_->db, fmt::format("SELECT {} FROM decisions ORDER BY device, problem", kDecisionColumns).c_str());
  nlohmann::json out = nlohmann::json::array();
  while (st.step()) {
    auto d = decision_of(st);
    if (!d) continue;
    out.push_back({{"problem", d->problem},
                   {"device", st.text(1)},
                   {"family", d->family},
                   {"backend", d->backend},
                   {"backend_version", d->backend_version},
                   {"candidate", d->candidate},
                   {"config", d->config},
                   {"us", d->us},
                   {"rate", d->rate},
                   {"search", d->search},
                   {"candidates", d->candidates},
                   {"backends_considered", d->backends_considered},
                   {"tuned_at", d->tuned_at}});
  }
  return out;
}

int TuningDb::clear() {
  sqlite3* db = db_->db;
  // The write lock first: a read (the count) still open when asking for it would fail at once
  // with "database is locked" instead of waiting for other writers.
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

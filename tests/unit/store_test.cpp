#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <atomic>
#include <functional>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/files.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/tuning_db.hpp"
#include "store/kernel_cache.hpp"

using namespace gf;

namespace {
std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("gf_test_" + name + "_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

Measurement measurement(const std::string& cand, double us, bool ok) {
  Measurement m;
  m.problem = "16x16x16:bf16";
  m.backend = "cublaslt";
  m.candidate = cand;
  m.config = {{"rank", 0}};
  m.verified = ok;
  m.us = us;
  m.error = ok ? "" : "wrong";
  return m;
}
}  // namespace

TEST(TuningDb, StoresDecisionsPerDevice) {
  auto path = fresh_dir("db") / "t.db";
  {
    TuningDb db(path, "gpu-a");
    EXPECT_FALSE(db.decision("16x16x16:bf16"));
    const Decision d{.problem = "16x16x16:bf16",
                     .family = "gemm",
                     .backend = "cublaslt",
                     .backend_version = "13.1.0",
                     .candidate = "c1",
                     .config = {{"rank", 1}},
                     .us = 3.5,
                     .rate = 0.1,
                     .search = "fast",
                     .candidates = 3,
                     .backends_considered = {"cublaslt", "native"}};
    db.store(d, {measurement("c0", 4.0, true), measurement("c1", 3.5, true), measurement("bad", 0, false)});
  }
  TuningDb db(path, "gpu-a");
  auto d = db.decision("16x16x16:bf16");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->candidate, "c1");
  EXPECT_EQ(d->config["rank"], 1);
  EXPECT_EQ(d->backends_considered, (std::vector<std::string>{"cublaslt", "native"}));
  EXPECT_FALSE(d->tuned_at.empty());
  EXPECT_EQ(d->family, "gemm");
  EXPECT_EQ(d->backend_version, "13.1.0");
  EXPECT_EQ(d->search, "fast");
  EXPECT_EQ(d->candidates, 3);
  auto ms = db.measurements("16x16x16:bf16");
  ASSERT_EQ(ms.size(), 3u);
  EXPECT_EQ(ms[0].candidate, "c1");  // verified first, fastest first
  EXPECT_FALSE(ms[2].verified);
  EXPECT_EQ(ms[2].error, "wrong");

  TuningDb other(path, "gpu-b");  // another device sees nothing
  EXPECT_FALSE(other.decision("16x16x16:bf16"));
  EXPECT_EQ(db.dump().size(), 1u);
  EXPECT_EQ(db.clear(), 1);
  EXPECT_FALSE(db.decision("16x16x16:bf16"));
}

TEST(TuningDb, SeveralWritersAtOnce) {
  auto path = fresh_dir("dbw") / "t.db";
  std::vector<std::thread> writers;
  for (int t = 0; t < 4; ++t)
    writers.emplace_back([&, t] {
      TuningDb db(path, "gpu");
      for (int i = 0; i < 20; ++i) {
        std::string key = fmt::format("{}x16x16:bf16", t * 100 + i + 1);
        db.store({.problem = key, .family = "gemm", .backend = "cublaslt", .candidate = "c", .us = 1.0}, {});
      }
    });
  for (auto& w : writers) w.join();
  EXPECT_EQ(TuningDb(path, "gpu").dump().size(), 80u);
}

// Runs sql on the DB file directly, as another program (or a crash) might leave it.
void raw_sql(const std::filesystem::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

std::string open_error(const std::filesystem::path& path) {
  try {
    TuningDb db(path, "gpu");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(TuningDb, CarriesItsSchemaVersion) {
  const auto dir = fresh_dir("schema");
  // An older gemmforge's unversioned schema: emptied and rebuilt, its decisions tuned again.
  raw_sql(dir / "old.db",
          "CREATE TABLE decisions (problem TEXT, device TEXT); INSERT INTO decisions VALUES ('p', 'gpu');");
  {
    TuningDb db(dir / "old.db", "gpu");
    EXPECT_EQ(db.dump().size(), 0u);
    db.store({.problem = "p", .family = "gemm", .backend = "b", .candidate = "c"}, {});
    EXPECT_TRUE(db.decision("p"));
  }
  // A newer schema, or another program's tables, or a file that is no database: refused, naming the file.
  raw_sql(dir / "new.db", "PRAGMA user_version = 99; CREATE TABLE t (x);");
  EXPECT_NE(open_error(dir / "new.db").find("newer than this gemmforge"), std::string::npos)
      << open_error(dir / "new.db");
  raw_sql(dir / "foreign.db", "CREATE TABLE users (name TEXT);");
  EXPECT_NE(open_error(dir / "foreign.db").find("not a gemmforge DB"), std::string::npos);
  std::ofstream(dir / "junk.db") << std::string(8192, 'x');
  const std::string junk = open_error(dir / "junk.db");
  EXPECT_NE(junk.find((dir / "junk.db").string()), std::string::npos) << junk;
  EXPECT_NE(junk.find("db clear"), std::string::npos) << junk;
}

TEST(TuningDb, ADamagedRowIsSkippedNotFatal) {
  const auto path = fresh_dir("rows") / "t.db";
  {
    TuningDb db(path, "gpu");
    for (const char* key : {"a", "b"})
      db.store({.problem = key, .family = "gemm", .backend = "cublaslt", .candidate = "c", .config = {{"rank", 0}}},
               {measurement("m", 1.0, true)});
  }
  raw_sql(path,
          "UPDATE decisions SET config = '{not json' WHERE problem = 'a';"
          "UPDATE measurements SET config = x'ff00' WHERE problem = '16x16x16:bf16';");
  TuningDb db(path, "gpu");
  EXPECT_FALSE(db.decision("a"));  // as if absent: tuned again
  EXPECT_TRUE(db.decision("b"));
  EXPECT_EQ(db.dump().size(), 1u);
  EXPECT_EQ(db.measurements("16x16x16:bf16").size(), 0u);
}

TEST(TuningDb, ClearWaitsForAnotherWriter) {
  const auto path = fresh_dir("clear") / "t.db";
  TuningDb writer(path, "gpu");
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    for (int i = 0; !stop; ++i)
      writer.store({.problem = fmt::format("{}", i % 50), .family = "gemm", .backend = "b", .candidate = "c"},
                   {measurement("m", 1.0, true)});
  });
  TuningDb other(path, "gpu");
  for (int i = 0; i < 20; ++i) EXPECT_NO_THROW(other.clear());
  stop = true;
  busy.join();
}

TEST(KernelCache, MissThenHitAcrossInstances) {
  auto dir = fresh_dir("cache");
  {
    KernelCache cache(dir);
    EXPECT_FALSE(cache.get("k-0123"));
    cache.put("k-0123",
              std::string("\x7f"
                          "ELF\0binary",
                          11),
              R"({"registers": 90})");
    auto hit = cache.get("k-0123");
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->bytes.size(), 11u);
  }
  KernelCache again(dir);  // a new process would see the file
  auto hit = again.get("k-0123");
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->bytes[1], 'E');
  EXPECT_EQ(hit->meta, R"({"registers": 90})");
  // No temporary files are left behind by the atomic writes.
  for (const auto& f : std::filesystem::directory_iterator(dir))
    EXPECT_TRUE(f.path().extension() == ".bin" || f.path().extension() == ".json") << f.path();
}

// A cache entry that does not match what was stored (truncated, zeroed, a bit flipped, replaced,
// its size or hash lost) is never served: a miss, counted, and the next put repairs it.
TEST(KernelCache, DamagedEntriesAreMissesNotServed) {
  const auto dir = fresh_dir("cache_damage");
  const std::string kernel(4096, '\x5a');
  auto damage = [&](const std::function<void(std::string&)>& how, const char* what) {
    {
      KernelCache cache(dir);
      cache.put("k", kernel, "{}");
    }
    std::ifstream in(dir / "k.bin", std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    in.close();
    how(bytes);
    std::ofstream(dir / "k.bin", std::ios::binary) << bytes;
    KernelCache fresh(dir);  // a new process: nothing in memory
    EXPECT_FALSE(fresh.get("k")) << what;
    EXPECT_EQ(fresh.rejected(), 1) << what;
    fresh.put("k", kernel, "{}");
    KernelCache repaired(dir);
    auto hit = repaired.get("k");
    ASSERT_TRUE(hit) << what;
    EXPECT_EQ(hit->bytes, kernel) << what;
  };
  damage([](std::string& b) { b.resize(b.size() / 2); }, "truncated");
  damage([](std::string& b) { b.assign(b.size(), '\0'); }, "zeroed");
  damage([](std::string& b) { b[100] ^= 0x04; }, "one bit flipped");
  damage([](std::string& b) { b = std::string(5000, 'r'); }, "replaced");
  {
    KernelCache cache(dir);
    cache.put("k", kernel, "{}");
  }
  std::ofstream(dir / "k.json") << "{not json";
  KernelCache no_envelope(dir);
  EXPECT_FALSE(no_envelope.get("k")) << "a damaged envelope";
  std::filesystem::remove(dir / "k.json");
  EXPECT_FALSE(no_envelope.get("k")) << "no envelope";
}

TEST(Files, WriteAtomicallyReplacesWholeFilesAndWritesThroughSpecialOnes) {
  namespace fs = std::filesystem;
  const fs::path dir = fresh_dir("files");
  const fs::path file = dir / "out.json";
  write_file_atomically(file, "first");
  write_file_atomically(file, "second");
  auto read = [](const fs::path& p) {
    std::ifstream in(p);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };
  EXPECT_EQ(read(file), "second");
  // A symlink is written through, not replaced by the rename.
  fs::create_symlink(file, dir / "link.json");
  write_file_atomically(dir / "link.json", "third");
  EXPECT_TRUE(fs::is_symlink(dir / "link.json"));
  EXPECT_EQ(read(file), "third");
  write_file_atomically("/dev/null", "nothing");
  EXPECT_FALSE(fs::is_regular_file("/dev/null"));
  // A directory that does not exist: an error naming the path, and no temporary left behind.
  EXPECT_THROW(write_file_atomically(dir / "missing" / "x.json", "x"), Error);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) files += e.path().extension() == ".tmp";
  EXPECT_EQ(files, 0u);
  fs::remove_all(dir);
}

TEST(TuningDb, ExportImportRoundTripKeepsTheFasterAndRefusesDamage) {
  auto dir = fresh_dir("export");
  Decision d{.problem = "16x16x16:bf16", .family = "gemm", .backend = "native", .backend_version = "0.1.0",
             .candidate = "fast_one", .config = {{"bm", 64}}, .us = 2.0, .rate = 0.004, .search = "fast",
             .candidates = 8, .backends_considered = {"cublaslt", "native"}, .tuned_at = "2026-12-01T00:00:00Z"};
  nlohmann::json exported;
  {
    TuningDb a(dir / "a.db", "gpu-a");
    a.store(d, {});
    TuningDb b(dir / "a.db", "gpu-b");
    b.store({.problem = "softmax:8x128:bf16", .family = "rowop", .backend = "native", .backend_version = "0.1.0",
             .candidate = "r", .config = {{"t", 1}}, .us = 1.0, .rate = 1, .search = "default", .candidates = 2,
             .backends_considered = {"native"}, .tuned_at = "2026-12-01T00:00:01Z"},
            {});
    exported = a.export_json();
  }
  ASSERT_EQ(exported["decisions"].size(), 2u);
  TuningDb c(dir / "c.db", "gpu-a");
  EXPECT_EQ(c.import_json(exported), 2);
  EXPECT_EQ(c.export_json(), exported);  // identical, devices and times included
  EXPECT_EQ(c.import_json(exported), 0);  // the same again: nothing faster

  // A slower copy of a decision the DB has does not replace it; a faster one does.
  auto slower = exported;
  slower["decisions"][0]["us"] = 9.0;
  slower["decisions"][0]["candidate"] = "slow_one";
  EXPECT_EQ(c.import_json(slower), 0);
  EXPECT_EQ(c.decision("16x16x16:bf16")->candidate, "fast_one");
  auto faster = slower;
  faster["decisions"][0]["us"] = 1.0;
  EXPECT_EQ(c.import_json(faster), 1);
  EXPECT_EQ(c.decision("16x16x16:bf16")->candidate, "slow_one");

  // Damaged or foreign: refused whole, with the entry and the reason, nothing stored.
  TuningDb e(dir / "e.db", "gpu-a");
  auto expect_refused = [&](nlohmann::json x, const std::string& why) {
    try {
      e.import_json(x);
      ADD_FAILURE() << "accepted: " << x.dump();
    } catch (const Error& err) {
      EXPECT_NE(std::string(err.what()).find(why), std::string::npos) << err.what();
      EXPECT_EQ(std::string(err.what()).find('\n'), std::string::npos);
    }
  };
  expect_refused(nlohmann::json::array(), "not a gemmforge tuning export");
  auto other_version = exported;
  other_version["gemmforge_tuning_export"] = 99;
  expect_refused(other_version, "version 99");
  auto garbage = exported;
  garbage["decisions"][1]["us"] = "fast";
  expect_refused(garbage, "entry 1");
  auto foreign = exported;
  foreign["decisions"][0]["problem"] = "16x16x16:bf16:frobnicate";
  expect_refused(foreign, "entry 0");
  auto odd = exported;
  odd["decisions"][0]["problem"] = "16x16x16:bf16:tn";  // parses, but not as its own key
  expect_refused(odd, "canonical");
  auto untimed = exported;
  untimed["decisions"][0]["us"] = 0.0;  // only a pin has no time
  expect_refused(untimed, "entry 0");
  EXPECT_EQ(e.dump().size(), 0u);
  // A pinned decision (gemmforge db pin) travels too: no time, and so the faster of any two.
  auto pinned = exported;
  pinned["decisions"][0]["us"] = 0.0;
  pinned["decisions"][0]["search"] = "pinned";
  EXPECT_EQ(e.import_json(pinned), int(pinned["decisions"].size()));
  EXPECT_EQ(e.import_json(exported), 0);  // the timed twin does not replace the pin
  const auto all = e.dump();
  EXPECT_TRUE(std::any_of(all.begin(), all.end(), [](const nlohmann::json& d) { return d["search"] == "pinned"; }));
}

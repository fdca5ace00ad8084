#include <fmt/format.h>
#include <gtest/gtest.h>

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
    Decision d{"16x16x16:bf16", "cublaslt", "c1", {{"rank", 1}}, 3.5, 0.1, {"cublaslt", "native"}, ""};
    db.store(d, {measurement("c0", 4.0, true), measurement("c1", 3.5, true), measurement("bad", 0, false)});
  }
  TuningDb db(path, "gpu-a");
  auto d = db.decision("16x16x16:bf16");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->candidate, "c1");
  EXPECT_EQ(d->config["rank"], 1);
  EXPECT_EQ(d->backends_considered, (std::vector<std::string>{"cublaslt", "native"}));
  EXPECT_FALSE(d->tuned_at.empty());
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
        db.store({key, "cublaslt", "c", {}, 1.0, 1.0, {"cublaslt"}, ""}, {});
      }
    });
  for (auto& w : writers) w.join();
  EXPECT_EQ(TuningDb(path, "gpu").dump().size(), 80u);
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
    EXPECT_TRUE(f.path().extension() == ".cubin" || f.path().extension() == ".json") << f.path();
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

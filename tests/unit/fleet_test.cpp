// The fleet's parts that need neither a GPU nor a Redis server: splitting problems across hosts
// and GPUs, the store URL and its redaction, and the system DB under the user DB.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "gemmforge/error.hpp"
#include "gemmforge/tuning_db.hpp"
#include "store/redis_url.hpp"
#include "store/remote_store.hpp"
#include "tune/fleet.hpp"

using namespace gf;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / fmt::format("gf_fleet_{}_{}", name, getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

Decision decision(const std::string& problem, const std::string& candidate, double us) {
  return {.problem = problem, .family = "gemm", .backend = "cublaslt", .backend_version = "13.1.0",
          .candidate = candidate, .config = {{"rank", 0}}, .us = us, .rate = 1, .search = "default",
          .candidates = 4, .backends_considered = {"cublaslt"}, .tuned_at = "2026-12-01T00:00:00Z"};
}

}  // namespace

TEST(Fleet, ShardsCoverEveryProblemExactlyOnce) {
  std::vector<std::string> keys;
  for (int i = 0; i < 101; ++i) keys.push_back(fmt::format("{}x4096x4096:bf16", 16 * (i + 1)));
  keys.push_back(keys[7]);  // a duplicate is one problem
  for (int n : {1, 2, 3, 7, 101, 150}) {
    std::map<std::string, int> seen;
    size_t largest = 0, smallest = SIZE_MAX;
    for (int i = 0; i < n; ++i) {
      // Each host lists the problems in its own order: the split must not depend on it.
      std::vector<std::string> listed = keys;
      std::rotate(listed.begin(), listed.begin() + i % listed.size(), listed.end());
      const auto mine = tune::shard_keys(listed, {i, n});
      for (const auto& k : mine) ++seen[k];
      largest = std::max(largest, mine.size());
      smallest = std::min(smallest, mine.size());
    }
    EXPECT_EQ(seen.size(), 101u) << n << " shards";
    for (const auto& [k, times] : seen) EXPECT_EQ(times, 1) << k << " in " << n << " shards";
    EXPECT_LE(largest - smallest, 1u) << "shards of " << n << " are unbalanced";
  }
}

TEST(Fleet, BadShardAndGpuSpecsAreOneLineErrors) {
  EXPECT_EQ(tune::Shard::parse("2/5").index, 2);
  EXPECT_EQ(tune::Shard::parse("2/5").count, 5);
  for (const char* bad : {"", "1", "5/5", "-1/4", "1/0", "a/b", "1/2/3", "0/4 ", " 0/4", "1/99999999999"}) {
    const std::string e = error_of([&] { tune::Shard::parse(bad); });
    EXPECT_NE(e.find("--shard takes i/n"), std::string::npos) << "'" << bad << "': " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos);
  }
  EXPECT_FALSE(tune::parse_gpus("all"));
  EXPECT_EQ(*tune::parse_gpus("0,2,1"), (std::vector<int>{0, 2, 1}));
  EXPECT_EQ(*tune::parse_gpus("0,0"), (std::vector<int>{0, 0}));  // two tuners sharing GPU 0
  for (const char* bad : {"", "0,,1", "x", "-1", "1.5", "ALL", "4096"}) {
    const std::string e = error_of([&] { tune::parse_gpus(bad); });
    EXPECT_NE(e.find("--gpus takes all"), std::string::npos) << "'" << bad << "': " << e;
  }
  // Without a GPU, --gpus says so (and what still works); an ordinal the host lacks is named.
  const std::string none = error_of([] { tune::resolve_gpus(std::nullopt, 0, "no CUDA driver found"); });
  EXPECT_NE(none.find("no CUDA driver found"), std::string::npos) << none;
  EXPECT_NE(none.find("gemmforge compile"), std::string::npos) << none;
  EXPECT_EQ(tune::resolve_gpus(std::nullopt, 3, ""), (std::vector<int>{0, 1, 2}));
  const std::string missing = error_of([] { tune::resolve_gpus(std::vector<int>{0, 4}, 2, ""); });
  EXPECT_NE(missing.find("GPU 4"), std::string::npos) << missing;
}

TEST(Fleet, EachProblemIsTunedOncePerGpuModel) {
  // Fake devices: three H200s and an H100. Decisions are keyed by the model, so each problem is
  // tuned once on one of the H200s (they would all choose the same) and once on the H100.
  const std::string h200 = "NVIDIA H200|sm90|132sm|driver 13000|cuda 13000";
  const std::string h100 = "NVIDIA H100 80GB HBM3|sm90|132sm|driver 13000|cuda 13000";
  std::vector<std::string> keys;
  for (int i = 0; i < 10; ++i) keys.push_back(fmt::format("{}x16x16:bf16", i + 1));
  const auto shares = tune::assign_to_gpus(keys, {h200, h100, h200, h200});
  ASSERT_EQ(shares.size(), 4u);
  std::multiset<std::string> on_h200;
  for (size_t g : {0u, 2u, 3u}) on_h200.insert(shares[g].begin(), shares[g].end());
  EXPECT_EQ(on_h200, std::multiset<std::string>(keys.begin(), keys.end()));
  EXPECT_EQ(shares[1], keys);
  for (size_t g : {0u, 2u, 3u}) EXPECT_GE(shares[g].size(), 3u) << "GPU " << g << " got too little";
  EXPECT_TRUE(tune::assign_to_gpus(keys, {}).empty());
  // One GPU named twice: two tuners share it, half the problems each.
  const auto shared = tune::assign_to_gpus(keys, {h200, h200});
  EXPECT_EQ(shared[0].size(), 5u);
  EXPECT_EQ(shared[1].size(), 5u);
}

TEST(StoreUrl, ParsesAndRefusesInOneLineWithoutThePassword) {
  auto u = store::RedisUrl::parse("redis://:s3cr%40t@cache.example:6380/2");
  EXPECT_EQ(u.host, "cache.example");
  EXPECT_EQ(u.port, 6380);
  EXPECT_EQ(u.db, 2);
  EXPECT_EQ(u.password, "s3cr@t");
  EXPECT_EQ(u.redacted(), "redis://***@cache.example:6380/2");
  auto plain = store::RedisUrl::parse("redis://127.0.0.1");
  EXPECT_EQ(plain.port, 6379);
  EXPECT_EQ(plain.db, 0);
  EXPECT_EQ(plain.redacted(), "redis://127.0.0.1:6379/0");
  auto user = store::RedisUrl::parse("redis://tuner:hunter2@h:1/0");
  EXPECT_EQ(user.user, "tuner");
  EXPECT_EQ(user.password, "hunter2");

  for (const char* bad : {"redis://:hunter2@", "redis://:hunter2@h:0", "redis://:hunter2@h:99999",
                          "redis://:hunter2@h:1/x", "redis://hunter2@h", "redis://:hunter2@h?ssl=1",
                          "http://:hunter2@h", "redis://:hunter2@h:1/0%zz", "redis://:hunter2%zz@h"}) {
    const std::string e = error_of([&] { store::RedisUrl::parse(bad); });
    EXPECT_NE(e.find("bad tuning store URL"), std::string::npos) << bad << ": " << e;
    EXPECT_EQ(e.find("hunter2"), std::string::npos) << "the password leaked: " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos);
  }
  // The TLS form, without hiredis_ssl, is refused in one line, also without the password.
  const std::string tls = error_of([] { store::RemoteStore("rediss://:hunter2@h:6379"); });
  EXPECT_NE(tls.find("TLS"), std::string::npos) << tls;
  EXPECT_EQ(tls.find("hunter2"), std::string::npos) << tls;
  // Through the DB's own entry point too.
  const std::string via_db = error_of([] { TuningDb::open("redis://:hunter2@h:70000", "gpu"); });
  EXPECT_NE(via_db.find("port"), std::string::npos) << via_db;
  EXPECT_EQ(via_db.find("hunter2"), std::string::npos) << via_db;
}

TEST(SystemDb, ReadUnderTheUserDbWhichWinsAndNeverWritten) {
  const auto dir = fresh_dir("system");
  const auto shipped = dir / "shipped" / "system.db";
  {
    TuningDb team(shipped, "gpu");
    team.store(decision("16x16x16:bf16", "team_pick", 5.0), {});
    team.store(decision("32x16x16:bf16", "team_only", 5.0), {});
  }
  std::filesystem::remove(shipped.string() + "-wal");  // a shipped file is one file
  std::filesystem::remove(shipped.string() + "-shm");
  const auto before = std::filesystem::last_write_time(shipped);
  std::filesystem::permissions(shipped.parent_path(), std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);

  {
    TuningDb user(dir / "user.db", "gpu", {.system_db = shipped});
    EXPECT_EQ(user.decision("32x16x16:bf16")->candidate, "team_only");  // only the system DB has it
    EXPECT_EQ(user.decision("16x16x16:bf16")->candidate, "team_pick");
    user.store(decision("16x16x16:bf16", "user_pick", 9.0), {});  // slower, but the user's: it wins
    EXPECT_EQ(user.decision("16x16x16:bf16")->candidate, "user_pick");
    EXPECT_FALSE(user.decision("64x16x16:bf16"));
    EXPECT_EQ(user.dump().size(), 1u);  // the system DB's decisions are not copied in
    TuningDb other_gpu(dir / "user.db", "other-gpu", {.system_db = shipped});
    EXPECT_FALSE(other_gpu.decision("32x16x16:bf16"));  // keyed by device there too
  }
  std::filesystem::permissions(shipped.parent_path(), std::filesystem::perms::owner_all);
  EXPECT_EQ(std::filesystem::last_write_time(shipped), before);
  EXPECT_FALSE(std::filesystem::exists(shipped.string() + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(shipped.string() + "-shm"));

  // The same from a `db export` JSON.
  const auto json = dir / "system.json";
  std::ofstream(json) << TuningDb(shipped, "gpu").export_json().dump();
  TuningDb from_json(dir / "user2.db", "gpu", {.system_db = json});
  EXPECT_EQ(from_json.decision("32x16x16:bf16")->candidate, "team_only");

  // A system DB that cannot be read is left out; the user DB goes on.
  std::ofstream(dir / "junk.db") << "not a database at all";
  for (const auto& broken : {dir / "junk.db", dir / "absent.db", dir / "junk.json"}) {
    std::ofstream(dir / "junk.json") << "{";
    TuningDb user(dir / "user.db", "gpu", {.system_db = broken});
    EXPECT_EQ(user.decision("16x16x16:bf16")->candidate, "user_pick") << broken;
    EXPECT_FALSE(user.decision("32x16x16:bf16")) << broken;
  }
  std::filesystem::remove_all(dir);
}

TEST(RemoteStore, RefusesDamagedAndForeignValues) {
  const Decision d = decision("16x16x16:bf16", "c", 2.0);
  const std::string good = store::RemoteStore::value("gpu", d, {});
  std::string why;
  ASSERT_TRUE(store::RemoteStore::parse_value(good, "gpu", d.problem, &why)) << why;
  auto refused = [&](const std::string& v, const std::string& device, const std::string& problem) {
    why.clear();
    EXPECT_FALSE(store::RemoteStore::parse_value(v, device, problem, &why)) << v;
    return why;
  };
  EXPECT_NE(refused(good, "other-gpu", d.problem).find("another device"), std::string::npos) << why;
  EXPECT_NE(refused(good, "gpu", "32x16x16:bf16").find("another problem"), std::string::npos);
  EXPECT_EQ(refused(good.substr(0, good.size() / 2), "gpu", d.problem), "not JSON");
  auto j = nlohmann::json::parse(good);
  j["gemmforge_decision"] = 99;
  EXPECT_NE(refused(j.dump(), "gpu", d.problem).find("schema"), std::string::npos);
  j = nlohmann::json::parse(good);
  j["us"] = "fast";
  EXPECT_NE(refused(j.dump(), "gpu", d.problem).find("us"), std::string::npos);
  j = nlohmann::json::parse(good);
  j.erase("measurements");
  EXPECT_NE(refused(j.dump(), "gpu", d.problem).find("measurements"), std::string::npos);
  EXPECT_NE(refused("[1,2]", "gpu", d.problem).find("schema"), std::string::npos);
}

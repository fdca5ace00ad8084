// The remote tuning store against a real redis-server, started by each test on a free port of
// 127.0.0.1 in a temporary directory and killed at its end. Skipped, saying so, where
// redis-server is not installed (CI installs it: scripts/setup.sh).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "core/log.hpp"
#include "gemmforge/tuning_db.hpp"
#include "store/kernel_cache.hpp"
#include "store/remote_store.hpp"

using namespace gf;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kDevice = "NVIDIA H200|sm90|132sm|driver 13000|cuda 13000";

std::string find_redis_server() {
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  path += ":/usr/bin:/usr/sbin:/usr/local/bin";
  std::stringstream dirs(path);
  for (std::string dir; std::getline(dirs, dir, ':');)
    if (!dir.empty() && access((dir + "/redis-server").c_str(), X_OK) == 0) return dir + "/redis-server";
  return "";
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// A client of our own, to look at (and damage) what the store holds.
struct Raw {
  redisContext* c = nullptr;
  explicit Raw(int port, const std::string& password = "") {
    c = redisConnect("127.0.0.1", port);
    if (!password.empty()) freeReplyObject(redisCommand(c, "AUTH %s", password.c_str()));
  }
  ~Raw() { redisFree(c); }
  redisReply* cmd(const std::vector<std::string>& args) {
    std::vector<const char*> argv;
    std::vector<size_t> len;
    for (const auto& a : args) {
      argv.push_back(a.data());
      len.push_back(a.size());
    }
    return static_cast<redisReply*>(redisCommandArgv(c, int(args.size()), argv.data(), len.data()));
  }
  bool ping() {
    redisReply* r = cmd({"PING"});
    const bool ok = r && r->type != REDIS_REPLY_ERROR;
    freeReplyObject(r);
    return ok && !c->err;
  }
  std::vector<std::string> keys() {
    std::vector<std::string> out;
    redisReply* r = cmd({"KEYS", "gemmforge:*"});
    for (size_t i = 0; r && i < r->elements; ++i) out.emplace_back(r->element[i]->str, r->element[i]->len);
    freeReplyObject(r);
    return out;
  }
  std::string get(const std::string& key) {
    redisReply* r = cmd({"GET", key});
    std::string v = r && r->type == REDIS_REPLY_STRING ? std::string(r->str, r->len) : "";
    freeReplyObject(r);
    return v;
  }
  void set(const std::string& key, const std::string& value) { freeReplyObject(cmd({"SET", key, value})); }
};

// redis-server in a temporary directory, nothing saved to disk.
class RedisServer {
 public:
  explicit RedisServer(std::vector<std::string> extra = {}) {
    const std::string exe = find_redis_server();
    if (exe.empty()) return;
    dir_ = std::filesystem::temp_directory_path() / fmt::format("gf_redis_{}_{}", getpid(), counter_++);
    std::filesystem::create_directories(dir_);
    for (int attempt = 0; attempt < 5 && !pid_; ++attempt) {  // a port taken meanwhile: another one
      port_ = free_port();
      std::vector<std::string> args = {exe,          "--port",  std::to_string(port_), "--bind", "127.0.0.1",
                                       "--save",     "",        "--appendonly",        "no",     "--dir",
                                       dir_.string(), "--logfile", (dir_ / "log").string()};
      args.insert(args.end(), extra.begin(), extra.end());
      const pid_t pid = fork();
      if (pid == 0) {
        // The server dies with the test, even one that aborts, and keeps none of its outputs open.
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        const int null = open("/dev/null", O_RDWR);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        execv(exe.c_str(), argv.data());
        _exit(127);
      }
      for (int i = 0; i < 500; ++i) {  // up to 5 s to answer
        if (waitpid(pid, nullptr, WNOHANG) == pid) break;
        redisContext* c = redisConnect("127.0.0.1", port_);
        const bool up = c && !c->err;
        redisFree(c);
        if (up) {
          pid_ = pid;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      if (!pid_) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
  }
  ~RedisServer() {
    stop();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  bool running() const { return pid_ != 0; }
  static std::string skip_reason() {
    return find_redis_server().empty() ? "redis-server is not installed (apt-get install redis-server)"
                                       : "redis-server did not start";
  }
  int port() const { return port_; }
  std::string url(const std::string& password = "") const {
    return fmt::format("redis://{}127.0.0.1:{}/0", password.empty() ? "" : ":" + password + "@", port_);
  }
  void stop() {
    if (!pid_) return;
    kill(pid_, SIGCONT);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
    pid_ = 0;
  }
  void pause() { kill(pid_, SIGSTOP); }
  void resume() { kill(pid_, SIGCONT); }

 private:
  static inline int counter_ = 0;
  std::filesystem::path dir_;
  int port_ = 0;
  pid_t pid_ = 0;
};

#define START_REDIS(server, ...)                                     \
  RedisServer server{{__VA_ARGS__}};                                 \
  if (!server.running()) GTEST_SKIP() << RedisServer::skip_reason();

// What the library logs while alive.
class LogCapture {
 public:
  LogCapture() {
    log().set_tap([this](std::string_view line) {
      std::lock_guard lock(mutex_);
      out_ << line << "\n";
    });
  }
  ~LogCapture() { log().set_tap({}); }
  std::string text() const {
    std::lock_guard lock(mutex_);
    return out_.str();
  }
  int count(const std::string& what) const {
    int n = 0;
    std::stringstream lines(text());
    for (std::string line; std::getline(lines, line);) n += line.find(what) != std::string::npos;
    return n;
  }

 private:
  mutable std::mutex mutex_;
  std::ostringstream out_;
};

// A directory of the test's local DBs, removed at its end.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : dir_(std::filesystem::temp_directory_path() / fmt::format("gf_redis_test_{}_{}", name, getpid())) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~TempDir() { std::filesystem::remove_all(dir_); }
  std::filesystem::path operator/(const std::string& file) const { return dir_ / file; }

 private:
  std::filesystem::path dir_;
};

std::string problem(int i) { return fmt::format("{}x4096x4096:bf16", i + 1); }

Decision decision(const std::string& p, const std::string& candidate, double us,
                  const std::string& backend = "cublaslt", const std::string& version = "13.1.0") {
  return {.problem = p, .family = "gemm", .backend = backend, .backend_version = version, .candidate = candidate,
          .config = {{"rank", 0}, {"who", candidate}}, .us = us, .rate = 1, .search = "default", .candidates = 2,
          .backends_considered = {"cublaslt", "native"}, .tuned_at = "2026-12-01T00:00:00Z"};
}

std::vector<Measurement> measured(const Decision& d, int n) {
  std::vector<Measurement> ms;
  for (int i = 0; i < n; ++i)
    ms.push_back({.problem = d.problem, .backend = d.backend, .candidate = fmt::format("{}_{}", d.candidate, i),
                  .config = {{"i", i}}, .verified = true, .us = d.us + i, .rate = 1, .rel_err = 1e-3});
  return ms;
}

// Every entry the server holds, each read as the store reads it; fails the test for any that does not.
std::map<std::string, store::RemoteEntry> every_entry(Raw& raw) {
  std::map<std::string, store::RemoteEntry> out;
  for (const auto& key : raw.keys()) {
    const std::string value = raw.get(key);
    auto j = nlohmann::json::parse(value, nullptr, false);
    std::string why;
    auto e = j.is_object() ? store::RemoteStore::parse_value(value, j.value("device", ""), j.value("problem", ""), &why)
                           : std::nullopt;
    EXPECT_TRUE(e) << key << " is torn or damaged: " << why;
    if (e) {
      EXPECT_EQ(key, store::RemoteStore::key(kDevice, e->decision.problem));
      out.emplace(key, std::move(*e));
    }
  }
  return out;
}

// Runs body in a child process; returns its pid. The child exits 0 when body returns, 1 when it throws.
pid_t in_child(const std::function<void()>& body) {
  const pid_t pid = fork();
  if (pid == 0) {
    int rc = 0;
    try {
      body();
    } catch (const std::exception& e) {
      fmt::print(stderr, "child: {}\n", e.what());
      rc = 1;
    }
    _exit(rc);
  }
  return pid;
}

int exit_code(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

// (a) 8 processes store 500 decisions each at once, each through its own local DB: none lost, none torn.
TEST(RedisStore, EightWritersAtOnceLoseNothing) {
  START_REDIS(server);
  const TempDir dir("eight");
  constexpr int kWriters = 8, kEach = 500;
  std::vector<pid_t> writers;
  for (int w = 0; w < kWriters; ++w)
    writers.push_back(in_child([&, w] {
      TuningDb db(dir / fmt::format("host{}.db", w), kDevice, {.remote = server.url()});
      for (int i = 0; i < kEach; ++i) {
        const Decision d = decision(problem(w * kEach + i), fmt::format("w{}_{}", w, i), 1.0 + i);
        db.store(d, measured(d, 3));
      }
    }));
  for (pid_t pid : writers) EXPECT_EQ(exit_code(pid), 0);
  Raw raw(server.port());
  const auto entries = every_entry(raw);
  ASSERT_EQ(entries.size(), size_t(kWriters * kEach));
  for (int w = 0; w < kWriters; ++w)
    for (int i = 0; i < kEach; i += 50) {
      const auto& e = entries.at(store::RemoteStore::key(kDevice, problem(w * kEach + i)));
      EXPECT_EQ(e.decision.candidate, fmt::format("w{}_{}", w, i));
      EXPECT_EQ(e.decision.config["who"], e.decision.candidate);
      EXPECT_EQ(e.measurements.size(), 3u);
    }
  // A host with no local DB reads them through, and keeps them: the server can go.
  TuningDb fresh(dir / "fresh.db", kDevice, {.remote = server.url()});
  EXPECT_EQ(fresh.decision(problem(7))->candidate, "w0_7");
  EXPECT_EQ(fresh.measurements(problem(7)).size(), 3u);
  // Threads sharing one TuningDb (a runtime building several problems at once) fill it together.
  TuningDb shared(dir / "shared.db", kDevice, {.remote = server.url()});
  std::vector<std::thread> readers;
  std::atomic<int> found = 0;
  for (int t = 0; t < 4; ++t)
    readers.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) found += shared.decision(problem(t * 100 + i)).has_value();
    });
  for (auto& r : readers) r.join();
  EXPECT_EQ(found, 400);
  EXPECT_EQ(shared.dump().size(), 400u);
  server.stop();
  EXPECT_EQ(TuningDb(dir / "fresh.db", kDevice).decision(problem(7))->candidate, "w0_7");
}

// (b) Two writers of the same keys keep the faster decision, whichever stores last.
TEST(RedisStore, TwoWritersOfOneKeyKeepTheFaster) {
  START_REDIS(server);
  const TempDir dir("faster");
  constexpr int kKeys = 200;
  std::vector<pid_t> writers;
  for (int w = 0; w < 2; ++w)
    writers.push_back(in_child([&, w] {
      TuningDb db(dir / fmt::format("host{}.db", w), kDevice, {.remote = server.url()});
      // Writer 1 is faster on every key; the two interleave, in opposite orders.
      for (int k = 0; k < kKeys; ++k) {
        const int i = w == 0 ? k : kKeys - 1 - k;
        db.store(decision(problem(i), fmt::format("writer{}", w), w == 1 ? 2.0 : 3.0), {});
      }
    }));
  for (pid_t pid : writers) EXPECT_EQ(exit_code(pid), 0);
  Raw raw(server.port());
  const auto entries = every_entry(raw);
  ASSERT_EQ(entries.size(), size_t(kKeys));
  for (const auto& [key, e] : entries) EXPECT_EQ(e.decision.candidate, "writer1") << key;

  store::RemoteStore remote(server.url());
  EXPECT_FALSE(remote.put(kDevice, decision(problem(0), "slower", 2.5), {}));  // slower: kept the other
  EXPECT_TRUE(remote.put(kDevice, decision(problem(0), "fastest", 1.0), {}));
  EXPECT_EQ(remote.get(kDevice, problem(0))->decision.candidate, "fastest");
  // The same backend at another version is replaced: that decision no longer stands anywhere.
  EXPECT_TRUE(remote.put(kDevice, decision(problem(0), "new_version", 4.0, "cublaslt", "13.2.0"), {}));
  EXPECT_EQ(remote.get(kDevice, problem(0))->decision.candidate, "new_version");
}

// (c) A writer killed with SIGKILL in the middle of its writes leaves every entry whole.
TEST(RedisStore, AWriterKilledMidWriteLeavesTheStoreConsistent) {
  START_REDIS(server);
  const TempDir dir("killed");
  const pid_t writer = in_child([&] {
    TuningDb db(dir / "host.db", kDevice, {.remote = server.url()});
    for (int i = 0;; ++i) {  // large values (measurements), so that the kill lands inside writes
      const Decision d = decision(problem(i % 5000), fmt::format("c{}", i), 1.0 + i);
      db.store(d, measured(d, 200));
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  kill(writer, SIGKILL);
  EXPECT_EQ(exit_code(writer), 128 + SIGKILL);
  Raw raw(server.port());
  const auto entries = every_entry(raw);
  EXPECT_GT(entries.size(), 0u);
  for (const auto& [key, e] : entries) EXPECT_EQ(e.measurements.size(), 200u) << key;
  // Its local DB too: every decision readable.
  TuningDb local(dir / "host.db", kDevice);
  for (const auto& row : local.dump()) EXPECT_TRUE(local.decision(row["problem"].get<std::string>()));
}

// (d) The server stops, or hangs, mid-run: the run completes on the local DB, with one warning.
TEST(RedisStore, AServerThatStopsOrHangsCostsOneWarningNoHang) {
  START_REDIS(server);
  const TempDir dir("down");
  LogCapture logged;
  {
    TuningDb db(dir / "host.db", kDevice, {.remote = server.url()});
    for (int i = 0; i < 20; ++i) db.store(decision(problem(i), "before", 1.0), {});
    server.stop();
    const auto start = Clock::now();
    for (int i = 20; i < 60; ++i) db.store(decision(problem(i), "after", 1.0), {});
    for (int i = 0; i < 80; ++i) EXPECT_EQ(db.decision(problem(i)).has_value(), i < 60) << i;
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
    EXPECT_EQ(db.dump().size(), 60u);
  }
  EXPECT_EQ(logged.count("tuning store"), 1) << logged.text();
  EXPECT_EQ(logged.count("warning"), 1) << logged.text();  // and no other

  // Hung (SIGSTOP): connections open, nothing answers. One call waits out the timeout, the next skip.
  START_REDIS(hung);
  LogCapture logged_hung;
  TuningDb db(dir / "host2.db", kDevice, {.remote = hung.url()});
  hung.pause();
  const auto start = Clock::now();
  for (int i = 0; i < 20; ++i) db.store(decision(problem(i), "while_hung", 1.0), {});
  for (int i = 0; i < 40; ++i) EXPECT_EQ(db.decision(problem(i)).has_value(), i < 20);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  hung.resume();
  EXPECT_LT(seconds, 3.0);
  EXPECT_EQ(logged_hung.count("tuning store"), 1) << logged_hung.text();
}

// (e) Damaged and foreign entries are refused with a warning naming the key, and never used.
TEST(RedisStore, DamagedAndForeignEntriesAreRefused) {
  START_REDIS(server);
  const TempDir dir("damaged");
  Raw raw(server.port());
  const std::string good = store::RemoteStore::value(kDevice, decision(problem(0), "good", 1.0), {});
  auto foreign_device = nlohmann::json::parse(good);
  foreign_device["device"] = "NVIDIA H100|sm90|132sm|driver 13000|cuda 13000";
  auto other_schema = nlohmann::json::parse(good);
  other_schema["gemmforge_decision"] = 2;
  auto other_problem = nlohmann::json::parse(good);
  other_problem["problem"] = problem(99);
  const std::vector<std::string> bad = {good.substr(0, good.size() / 2), "\x01\x02 not json", foreign_device.dump(),
                                        other_schema.dump(), other_problem.dump(), "[]"};
  for (size_t i = 0; i < bad.size(); ++i) raw.set(store::RemoteStore::key(kDevice, problem(int(i))), bad[i]);

  LogCapture logged;
  TuningDb db(dir / "host.db", kDevice, {.remote = server.url()});
  for (size_t i = 0; i < bad.size(); ++i) {
    EXPECT_FALSE(db.decision(problem(int(i)))) << bad[i];
    EXPECT_EQ(logged.count(store::RemoteStore::key(kDevice, problem(int(i)))), 1) << logged.text();
  }
  EXPECT_EQ(db.dump().size(), 0u);  // nothing refused reached the local DB
  // A decision stored over a damaged entry replaces it, whatever the damaged one claimed.
  db.store(decision(problem(0), "repaired", 50.0), {});
  auto repaired = store::RemoteStore::parse_value(raw.get(store::RemoteStore::key(kDevice, problem(0))), kDevice,
                                                 problem(0), nullptr);
  ASSERT_TRUE(repaired);
  EXPECT_EQ(repaired->decision.candidate, "repaired");
}

// (f) The password reaches the server and nothing else: not the log, not messages, not the DB.
TEST(RedisStore, ThePasswordIsNeverPrinted) {
  const std::string password = "pw-7f3a9c-secret";
  START_REDIS(server, "--requirepass", password);
  const TempDir dir("password");
  LogCapture logged;
  {
    TuningDb db(dir / "host.db", kDevice, {.remote = server.url(password)});
    db.store(decision(problem(0), "with_auth", 1.0), {});
    EXPECT_EQ(db.describe().find(password), std::string::npos) << db.describe();
    EXPECT_NE(db.describe().find("***@"), std::string::npos) << db.describe();
  }
  Raw raw(server.port(), password);
  EXPECT_EQ(every_entry(raw).size(), 1u);
  // A wrong password (and then none): refused by the server, one warning, no secret in it.
  for (const std::string& url : {server.url("wrong-" + password), server.url()}) {
    TuningDb db(dir / "other.db", kDevice, {.remote = url});
    EXPECT_FALSE(db.decision(problem(0)));
    db.store(decision(problem(1), "local_only", 1.0), {});
  }
  EXPECT_EQ(logged.count("tuning store"), 2) << logged.text();
  EXPECT_EQ(logged.text().find(password), std::string::npos) << logged.text();
  EXPECT_EQ(every_entry(raw).size(), 1u);
  for (const char* file : {"host.db", "other.db"}) {
    std::ifstream in(dir / file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(bytes.find(password), std::string::npos) << file << " holds the password";
  }
}

// Kernel binaries travel with the decisions: what one host compiled another loads without
// compiling, checked against its size and hash; a damaged shared entry is refused, an oversized
// one never shared.
TEST(RedisStore, KernelsTravelBetweenHosts) {
  START_REDIS(server);
  const TempDir dir("kernels");
  KernelCache first(dir / "first"), second(dir / "second");
  first.share_through(server.url());
  second.share_through(server.url());
  std::string bytes(300000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = char(i * 7919 % 251);
  first.put("cute_kernel-0123", bytes, R"({"seconds": 1.5})");
  auto got = second.get("cute_kernel-0123");
  ASSERT_TRUE(got);
  EXPECT_EQ(got->bytes, bytes);
  EXPECT_EQ(got->meta, R"({"seconds": 1.5})");
  EXPECT_TRUE(std::filesystem::exists(dir / "second" / "cute_kernel-0123.bin")) << "kept locally too";

  Raw raw(server.port());
  std::string damaged = raw.get(store::RemoteStore::blob_key("cute_kernel-0123"));
  ASSERT_FALSE(damaged.empty());
  damaged[damaged.size() - 10] ^= 1;
  raw.set(store::RemoteStore::blob_key("cute_kernel-4567"), damaged);
  LogCapture logged;
  KernelCache third(dir / "third");
  third.share_through(server.url());
  EXPECT_FALSE(third.get("cute_kernel-4567"));
  EXPECT_EQ(third.rejected(), 1);
  EXPECT_EQ(logged.count("cute_kernel-4567"), 1) << logged.text();

  first.put("huge-kernel", std::string(KernelCache::kMaxSharedBytes + 1, 'x'));
  EXPECT_TRUE(raw.get(store::RemoteStore::blob_key("huge-kernel")).empty());
}

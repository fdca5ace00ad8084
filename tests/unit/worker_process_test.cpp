// The worker isolation machinery on the CPU: a worker that answers, one that hangs (killed at the
// timeout with everything it started), one that crashes (its signal reported), one that prints or
// breaks the protocol, and a restart after each; a worker dies with its parent (and, when it has
// adopted a worker's duties, so does what it started), and outlives the thread that started it.
#include "process/worker_process.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using gf::WorkerProcess;

namespace {

// Shell for a worker: reads a request from the channel into $line and its id into $id.
const std::string kRead = R"(read line <&3; id=${line##*\"id\":}; id=${id%%[,\}]*}; )";
// ... and answers with the JSON fields given after it (without braces).
std::string reply(const std::string& fields) {
  return "echo \"{\\\"id\\\":$id," + fields + "}\" >&4; ";
}

// Running: the process exists and is not a zombie (which nothing may reap in a container).
bool running(long pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return false;
  char buf[512] = {};
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  const char* paren = std::strrchr(buf, ')');
  return n > 0 && paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

bool gone_soon(long pid) {
  for (int i = 0; i < 200 && running(pid); ++i) usleep(10000);
  return !running(pid);
}

}  // namespace

TEST(WorkerProcess, AnswersLineByLine) {
  WorkerProcess w({"/bin/sh", "-c", "while " + kRead + "do " + reply(R"(\"ok\":true,\"echo\":1)") + "done"});
  for (int i = 0; i < 3; ++i) {
    auto r = w.call({{"op", "ping"}}, 5.0);
    EXPECT_TRUE(r.value("ok", false)) << r.dump();
    EXPECT_EQ(r.value("echo", 0), 1);
  }
}

TEST(WorkerProcess, WhatTheWorkerPrintsNeverBecomesAReply) {
  // Stray lines on stdout (device printf, a library's log, Python's print) and a reply to another
  // request must not shift the replies: each call gets its own.
  WorkerProcess w({"/bin/sh", "-c",
                   "while " + kRead + R"(do echo '{"ok":true,"stray":1}'; echo "{\"id\":999,\"ok\":true}" >&4; )" +
                       reply(R"(\"ok\":true,\"mine\":$id)") + "done"});
  for (int i = 1; i <= 3; ++i) {
    auto r = w.call({{"op", "ping"}}, 5.0);
    EXPECT_EQ(r.value("mine", 0), i) << r.dump();
    EXPECT_FALSE(r.contains("stray"));
  }
}

TEST(WorkerProcess, ALineOffTheProtocolEndsTheWorker) {
  WorkerProcess w({"/bin/sh", "-c", kRead + "echo 'not json' >&4; sleep 100"});
  auto r = w.call({{"op", "a"}}, 5.0);
  EXPECT_TRUE(r.value("crashed", false));
  EXPECT_NE(r.value("error", "").find("broke the protocol"), std::string::npos) << r.dump();
  EXPECT_FALSE(w.alive());
}

TEST(WorkerProcess, HangIsKilledAtTheTimeout) {
  WorkerProcess w({"/bin/sh", "-c", kRead + "exec sleep 100"});
  auto start = std::chrono::steady_clock::now();
  auto r = w.call({{"op", "measure"}}, 0.5);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(r.value("ok", true));
  EXPECT_TRUE(r.value("crashed", false));
  EXPECT_NE(r.value("error", "").find("timed out"), std::string::npos) << r.dump();
  EXPECT_LT(s, 3.0);
  EXPECT_FALSE(w.alive());
}

TEST(WorkerProcess, ATimeoutTakesEverythingTheWorkerStarted) {
  // The worker starts a child in its group and one that leaves the group and session (setsid),
  // reports both pids, then hangs.
  WorkerProcess w({"/bin/sh", "-c",
                   kRead + "sleep 100 & a=$!; setsid sleep 100 & b=$!; " + reply(R"(\"ok\":true,\"a\":$a,\"b\":$b)") +
                       kRead + "sleep 100"});
  auto first = w.call({{"op", "a"}}, 5.0);
  ASSERT_TRUE(first.value("ok", false)) << first.dump();
  const long a = first.value("a", 0L), b = first.value("b", 0L);
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  EXPECT_TRUE(running(a));
  auto r = w.call({{"op", "b"}}, 0.5);
  EXPECT_NE(r.value("error", "").find("timed out"), std::string::npos) << r.dump();
  EXPECT_TRUE(gone_soon(a)) << "the worker's child outlived it";
  EXPECT_TRUE(gone_soon(b)) << "the worker's setsid child outlived it";
}

TEST(WorkerProcess, CrashIsReportedAndTheNextCallRestarts) {
  // Answers once, then dies of SIGSEGV on the second request.
  WorkerProcess w({"/bin/sh", "-c", kRead + reply(R"(\"ok\":true)") + kRead + "kill -SEGV $$"});
  EXPECT_TRUE(w.call({{"op", "a"}}, 5.0).value("ok", false));
  auto r = w.call({{"op", "b"}}, 5.0);
  EXPECT_TRUE(r.value("crashed", false));
  EXPECT_NE(r.value("error", "").find("signal 11"), std::string::npos) << r.dump();
  EXPECT_TRUE(w.call({{"op", "c"}}, 5.0).value("ok", false)) << "a fresh worker answers again";
}

TEST(WorkerProcess, AWorkerThatExitedBetweenCallsIsReapedAndRestarted) {
  WorkerProcess w({"/bin/sh", "-c", kRead + reply(R"(\"ok\":true)") + "exit 0"});
  EXPECT_TRUE(w.call({{"op", "a"}}, 5.0).value("ok", false));
  const pid_t first = w.pid();
  for (int i = 0; i < 200 && running(first); ++i) usleep(10000);
  EXPECT_FALSE(w.alive()) << "an exited worker is not alive";
  EXPECT_FALSE(running(first));
  EXPECT_TRUE(w.call({{"op", "b"}}, 5.0).value("ok", false));
  EXPECT_NE(w.pid(), first);
}

TEST(WorkerProcess, FatalReplyEndsTheWorker) {
  WorkerProcess w(
      {"/bin/sh", "-c", kRead + reply(R"(\"ok\":false,\"fatal\":true,\"error\":\"illegal address\")") + "exit 3"});
  auto r = w.call({{"op", "measure"}}, 5.0);
  EXPECT_FALSE(r.value("ok", true));
  EXPECT_NE(r.value("error", "").find("illegal address"), std::string::npos);
  EXPECT_NE(r.value("error", "").find("exited with status 3"), std::string::npos) << r.dump();
  EXPECT_FALSE(w.alive());
}

TEST(WorkerProcess, MissingExecutableIsAnError) {
  WorkerProcess w({"/nonexistent/gemmforge", "__worker"});
  auto r = w.call({{"op", "problem"}}, 5.0);
  EXPECT_FALSE(r.value("ok", true));
  EXPECT_NE(r.value("error", "").find("127"), std::string::npos) << r.dump();
}

// Run as a worker by the tests below, never on its own: adopts a worker's duties, starts a child
// and answers every request with the child's pid.
TEST(WorkerProcess, DISABLED_HelperWorkerWithAChild) {
  gf::adopt_worker_duties();
  const pid_t child = fork();
  if (child == 0) {
    execl("/bin/sleep", "sleep", "100", static_cast<char*>(nullptr));
    _exit(127);
  }
  gf::WorkerChannel channel;
  std::string line;
  while (channel.read(line)) {
    auto req = nlohmann::json::parse(line);
    if (req.value("op", "") == "quit") break;
    channel.write({{"id", req["id"]}, {"ok", true}, {"child", child}});
  }
  pause();  // the parent-death signal ends this worker, not the end of its input
}

namespace {

const std::vector<std::string> kHelper = {"/proc/self/exe", "--gtest_also_run_disabled_tests",
                                          "--gtest_filter=WorkerProcess.DISABLED_HelperWorkerWithAChild"};

// A parent (a child of this test) starts `argv` as a worker, reports the worker's pid and its
// reply's "child", and is killed with SIGKILL; returns those two pids.
std::pair<pid_t, pid_t> worker_of_a_killed_parent(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe(fds) != 0) return {0, 0};
  const pid_t parent = fork();
  if (parent == 0) {
    WorkerProcess w(argv);
    auto r = w.call({{"op", "start"}}, 20.0);
    const pid_t pids[2] = {w.pid(), r.value("child", pid_t(0))};
    [[maybe_unused]] auto n = write(fds[1], pids, sizeof pids);
    pause();
    _exit(0);
  }
  close(fds[1]);
  pid_t pids[2] = {0, 0};
  [[maybe_unused]] auto n = read(fds[0], pids, sizeof pids);
  close(fds[0]);
  kill(parent, SIGKILL);
  waitpid(parent, nullptr, 0);
  return {pids[0], pids[1]};
}

}  // namespace

TEST(WorkerProcess, DiesWithItsParent) {
  auto [worker, child] = worker_of_a_killed_parent({"/bin/sh", "-c", kRead + reply(R"(\"ok\":true)") + "exec sleep 100"});
  ASSERT_GT(worker, 0);
  EXPECT_TRUE(gone_soon(worker)) << "the worker outlived its parent";
}

TEST(WorkerProcess, AWorkerWithDutiesTakesItsChildrenWhenItsParentDies) {
  auto [worker, child] = worker_of_a_killed_parent(kHelper);
  ASSERT_GT(worker, 0);
  ASSERT_GT(child, 0);
  EXPECT_TRUE(gone_soon(worker)) << "the worker outlived its parent";
  EXPECT_TRUE(gone_soon(child)) << "the worker's child outlived the worker's parent";
}

TEST(WorkerProcess, OutlivesTheThreadThatStartedIt) {
  // The kernel's parent-death signal follows the forking thread: a worker a finished compile
  // thread started must still serve the next thread.
  WorkerProcess w({"/bin/sh", "-c", "while " + kRead + "do " + reply(R"(\"ok\":true)") + "done"});
  std::thread([&] { EXPECT_TRUE(w.call({{"op", "a"}}, 5.0).value("ok", false)); }).join();
  usleep(100000);
  auto r = w.call({{"op", "b"}}, 5.0);
  EXPECT_TRUE(r.value("ok", false)) << r.dump();
  EXPECT_FALSE(r.value("crashed", false)) << r.dump();
}

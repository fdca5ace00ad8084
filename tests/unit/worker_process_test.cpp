// The worker isolation machinery on the CPU: a worker that answers, one that hangs (killed at the
// timeout), one that crashes (its signal reported), and a restart after each.
#include "process/worker_process.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

using gf::WorkerProcess;

TEST(WorkerProcess, AnswersLineByLine) {
  WorkerProcess w({"/bin/sh", "-c",
                   "while read line; do case $line in *quit*) exit 0;; esac; echo '{\"ok\":true,\"echo\":1}'; done"});
  for (int i = 0; i < 3; ++i) {
    auto reply = w.call({{"op", "ping"}}, 5.0);
    EXPECT_TRUE(reply.value("ok", false)) << reply.dump();
    EXPECT_EQ(reply.value("echo", 0), 1);
  }
}

TEST(WorkerProcess, HangIsKilledAtTheTimeout) {
  // exec: the shell becomes the sleep, so killing the worker leaves no grandchild holding the
  // test's output open (ctest would wait for it).
  WorkerProcess w({"/bin/sh", "-c", "read line; exec sleep 100"});
  auto start = std::chrono::steady_clock::now();
  auto reply = w.call({{"op", "measure"}}, 0.5);
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(reply.value("ok", true));
  EXPECT_TRUE(reply.value("crashed", false));
  EXPECT_NE(reply.value("error", "").find("timed out"), std::string::npos) << reply.dump();
  EXPECT_LT(s, 3.0);
  EXPECT_FALSE(w.alive());
}

// Running: the process exists and is not a zombie (which nothing may reap in a container).
static bool running(long pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return false;
  char buf[512] = {};
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  const char* paren = std::strrchr(buf, ')');
  return n > 0 && paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

TEST(WorkerProcess, ATimeoutTakesTheWorkersChildrenToo) {
  // The worker starts a child of its own (as Triton's compile pool does), reports its pid, then hangs.
  WorkerProcess w(
      {"/bin/sh", "-c", R"(read line; sleep 100 & echo "{\"ok\":true,\"child\":$!}"; read line; sleep 100)"});
  auto first = w.call({{"op", "a"}}, 5.0);
  ASSERT_TRUE(first.value("ok", false)) << first.dump();
  const long child = first.value("child", 0L);
  ASSERT_GT(child, 0);
  EXPECT_TRUE(running(child));
  auto reply = w.call({{"op", "b"}}, 0.5);
  EXPECT_NE(reply.value("error", "").find("timed out"), std::string::npos) << reply.dump();
  for (int i = 0; i < 100 && running(child); ++i) usleep(10000);
  EXPECT_FALSE(running(child)) << "the worker's child outlived it";
}

TEST(WorkerProcess, CrashIsReportedAndTheNextCallRestarts) {
  // Answers once, then dies of SIGSEGV on the second request.
  WorkerProcess w({"/bin/sh", "-c", "read line; echo '{\"ok\":true}'; read line; kill -SEGV $$"});
  EXPECT_TRUE(w.call({{"op", "a"}}, 5.0).value("ok", false));
  auto reply = w.call({{"op", "b"}}, 5.0);
  EXPECT_TRUE(reply.value("crashed", false));
  EXPECT_NE(reply.value("error", "").find("signal 11"), std::string::npos) << reply.dump();
  EXPECT_TRUE(w.call({{"op", "c"}}, 5.0).value("ok", false)) << "a fresh worker answers again";
}

TEST(WorkerProcess, FatalReplyEndsTheWorker) {
  WorkerProcess w(
      {"/bin/sh", "-c", "read line; echo '{\"ok\":false,\"fatal\":true,\"error\":\"illegal address\"}'; exit 3"});
  auto reply = w.call({{"op", "measure"}}, 5.0);
  EXPECT_FALSE(reply.value("ok", true));
  EXPECT_NE(reply.value("error", "").find("illegal address"), std::string::npos);
  EXPECT_NE(reply.value("error", "").find("exited with status 3"), std::string::npos) << reply.dump();
  EXPECT_FALSE(w.alive());
}

TEST(WorkerProcess, MissingExecutableIsAnError) {
  WorkerProcess w({"/nonexistent/gemmforge", "__worker"});
  auto reply = w.call({{"op", "problem"}}, 5.0);
  EXPECT_FALSE(reply.value("ok", true));
  EXPECT_NE(reply.value("error", "").find("127"), std::string::npos) << reply.dump();
}

#include "core/task_queue.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

namespace gf {
namespace {

TEST(TaskQueue, OneThreadRunsTasksInTheOrderQueued) {
  std::vector<int> order;
  std::vector<std::future<void>> done;
  {
    TaskQueue q(1);
    for (int i = 0; i < 50; ++i) done.push_back(q.push([&order, i] { order.push_back(i); }));
    for (auto& f : done) f.get();
  }
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[size_t(i)], i);
}

TEST(TaskQueue, ResultsAndExceptionsReachTheFuture) {
  TaskQueue q(4);
  auto value = q.push([] { return 42; });
  auto thrown = q.push([]() -> int { throw std::runtime_error("bad candidate"); });
  EXPECT_EQ(value.get(), 42);
  EXPECT_THROW(thrown.get(), std::runtime_error);
}

TEST(TaskQueue, DestructionDropsWhatHasNotStarted) {
  std::atomic<bool> started{false}, release{false};
  std::future<void> running, queued;
  std::thread releaser;
  {
    TaskQueue q(1);
    running = q.push([&] {
      started = true;
      while (!release) std::this_thread::yield();
    });
    queued = q.push([] {});
    while (!started) std::this_thread::yield();
    releaser = std::thread([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      release = true;
    });
  }  // waits for the running task, drops the queued one
  releaser.join();
  running.get();
  EXPECT_THROW(queued.get(), std::future_error);
}

}  // namespace
}  // namespace gf

#pragma once
// A fixed set of threads that run tasks in the order they were queued: the tuner's compiles, so
// that the problems queued ahead of their turn (Tuner::prefetch) fill the cores one problem's few
// candidates leave idle, while the earliest problem's candidates still go first.
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

namespace gf {

class TaskQueue {
 public:
  explicit TaskQueue(int threads) {
    for (int t = 0; t < std::max(threads, 1); ++t) threads_.emplace_back([this] { work(); });
  }
  // Drops the tasks not yet started (their futures report a broken promise) and waits for the
  // running ones.
  ~TaskQueue() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
      queued_.clear();
    }
    ready_.notify_all();
    for (auto& t : threads_) t.join();
  }
  TaskQueue(const TaskQueue&) = delete;
  TaskQueue& operator=(const TaskQueue&) = delete;

  // fn's result (or what it threw), once a thread has run it.
  template <class Fn>
  auto push(Fn fn) -> std::future<decltype(fn())> {
    auto task = std::make_shared<std::packaged_task<decltype(fn())()>>(std::move(fn));
    auto result = task->get_future();
    {
      std::lock_guard lock(mu_);
      queued_.emplace_back([task] { (*task)(); });
    }
    ready_.notify_one();
    return result;
  }

 private:
  void work() {
    while (true) {
      std::function<void()> task;
      {
        std::unique_lock lock(mu_);
        ready_.wait(lock, [&] { return stop_ || !queued_.empty(); });
        if (queued_.empty()) return;  // stopping
        task = std::move(queued_.front());
        queued_.pop_front();
      }
      task();
    }
  }

  std::mutex mu_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> queued_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace gf

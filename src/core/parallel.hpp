#pragma once
// Runs fn(i) for every i in [0, n) on up to `jobs` threads: the parallel compile of every tuner
// and command. fn must not throw.
#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace gf {

template <class Fn>
void parallel_for(int n, int jobs, Fn&& fn) {
  std::atomic<int> next{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < std::min(std::max(jobs, 1), n); ++t)
    threads.emplace_back([&] {
      for (int i = next++; i < n; i = next++) fn(i);
    });
  for (auto& t : threads) t.join();
}

// One per core: the default number of jobs.
inline int default_jobs() { return int(std::max(1u, std::thread::hardware_concurrency())); }

}  // namespace gf

#pragma once
// A task run once, as std::call_once runs one, except that an exception leaves it not done (the
// next caller tries again) and reaches the caller. Work that can throw must not run under
// std::call_once here: an exception thrown through it (glibc's pthread_once) aborted the process on
// the GPU machine, where this binary's static unwinder meets that glibc's frames.
#include <atomic>
#include <mutex>

namespace gf {

class Once {
 public:
  bool done() const { return done_.load(std::memory_order_acquire); }

  template <class Fn>
  void run(Fn&& fn) {
    if (done()) return;
    std::lock_guard lock(mu_);
    if (done()) return;
    fn();
    done_.store(true, std::memory_order_release);
  }

 private:
  std::atomic<bool> done_ = false;
  std::mutex mu_;
};

}  // namespace gf

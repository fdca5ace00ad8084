#pragma once
// While alive, a write on this thread to a pipe or socket whose reader has gone fails with EPIPE
// instead of raising SIGPIPE, whose default action would kill the whole process: a library must
// not change the process's signal dispositions, so the signal is blocked for the thread and one
// it raised meanwhile is consumed before the old mask returns.
#include <pthread.h>
#include <signal.h>

namespace gf {

class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeBlocked() {
    if (!sigismember(&old_, SIGPIPE)) {
      const timespec zero{0, 0};
      while (sigtimedwait(&pipe_, nullptr, &zero) > 0) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

 private:
  sigset_t pipe_, old_;
};

}  // namespace gf

// The parent side of the worker protocol: spawn, send a line, wait for a line with a timeout.
// Each worker leads a process group of its own, and the whole group goes when it ends, so a
// worker killed at a timeout leaves none of its children (Triton's compile processes) behind.
#include "process/worker_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "gemmforge/error.hpp"

namespace gf {
namespace {

std::string describe_status(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return "ended";
}

}  // namespace

WorkerProcess::WorkerProcess(std::vector<std::string> argv) : argv_(std::move(argv)) {
  signal(SIGPIPE, SIG_IGN);  // a write to a dead worker must fail, not kill us
}

WorkerProcess::~WorkerProcess() {
  if (pid_ > 0) {
    std::string quit = "{\"op\":\"quit\"}\n";
    [[maybe_unused]] auto n = write(to_child_, quit.data(), quit.size());
    stop(false);
  }
}

void WorkerProcess::start() {
  int in[2], out[2];
  GF_CHECK(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0, "pipe failed: {}", strerror(errno));
  std::vector<char*> args;
  for (auto& a : argv_) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = fork();
  GF_CHECK(pid >= 0, "fork failed: {}", strerror(errno));
  if (pid == 0) {
    setpgid(0, 0);
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    execv(args[0], args.data());
    _exit(127);
  }
  setpgid(pid, pid);  // also here: the parent may signal the group before the child runs
  close(in[0]);
  close(out[1]);
  pid_ = pid;
  to_child_ = in[1];
  from_child_ = out[0];
  pending_.clear();
}

std::string WorkerProcess::stop(bool kill_now) {
  if (pid_ <= 0) return "not running";
  close(to_child_);
  close(from_child_);
  if (kill_now) kill(-pid_, SIGKILL);
  // A worker told to quit gets a few seconds to release the GPU, then is killed. It is waited
  // for without being reaped, so that its group id cannot have been reused when the group is
  // killed.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  siginfo_t info{};
  while (waitid(P_PID, id_t(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == 0) {
    if (std::chrono::steady_clock::now() > deadline) break;
    usleep(10000);
  }
  kill(-pid_, SIGKILL);  // the worker past its deadline, and whatever it left running
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return describe_status(status);
}

nlohmann::json WorkerProcess::call(const nlohmann::json& request, double timeout_s) {
  if (pid_ <= 0) start();
  std::string line = request.dump() + "\n";
  auto crashed = [&](const std::string& why) {
    return nlohmann::json{{"ok", false}, {"crashed", true}, {"error", why}};
  };
  if (write(to_child_, line.data(), line.size()) != ssize_t(line.size()))
    return crashed("worker " + stop(true) + " before taking the request");

  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    if (size_t nl = pending_.find('\n'); nl != std::string::npos) {
      std::string reply = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      auto j = nlohmann::json::parse(reply, nullptr, false);
      if (j.is_discarded()) return crashed("worker sent a malformed reply: " + reply.substr(0, 200));
      if (j.value("fatal", false)) j["error"] = j.value("error", "") + " (worker " + stop(false) + ")";
      return j;
    }
    auto left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      stop(true);
      return crashed(fmt::format("timed out after {:.0f} s (worker killed)", timeout_s));
    }
    pollfd pfd{from_child_, POLLIN, 0};
    int rc = poll(&pfd, 1, int(std::min(left, 1.0) * 1000) + 1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc > 0) {
      char buf[65536];
      ssize_t n = read(from_child_, buf, sizeof buf);
      if (n <= 0) return crashed("worker " + stop(false));
      pending_.append(buf, size_t(n));
    }
  }
}

}  // namespace gf

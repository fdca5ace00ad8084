// Both ends of the worker protocol: spawn, send a line with an id, wait for the reply with that
// id under a timeout; and on stopping, kill the worker and every process it started.
#include "process/worker_process.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/no_sigpipe.hpp"
#include "core/strings.hpp"
#include "gemmforge/error.hpp"

namespace gf {
namespace {

// The child's fds of the channel.
constexpr int kRequestFd = 3, kReplyFd = 4;
// A reply longer than this breaks the protocol (a runaway child, not a reply).
constexpr size_t kMaxReplyBytes = 64u << 20;

std::string describe_status(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("killed by signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return "ended";
}

// Every live descendant of root (children, theirs, ...), from the parent links in /proc.
std::vector<pid_t> descendants(pid_t root) {
  std::multimap<pid_t, pid_t> children;  // parent -> child
  if (DIR* proc = opendir("/proc")) {
    while (dirent* e = readdir(proc)) {
      const auto pid = parse_int(e->d_name);
      if (!pid) continue;
      std::ifstream in(fmt::format("/proc/{}/stat", *pid));
      std::string stat((std::istreambuf_iterator<char>(in)), {});
      const size_t paren = stat.rfind(')');  // the command may hold spaces and parentheses
      if (paren == std::string::npos || paren + 4 >= stat.size()) continue;
      const char state = stat[paren + 2];
      if (state == 'Z' || state == 'X') continue;
      children.emplace(pid_t(std::strtol(stat.c_str() + paren + 4, nullptr, 10)), pid_t(*pid));
    }
    closedir(proc);
  }
  std::vector<pid_t> out;
  std::vector<pid_t> frontier = {root};
  while (!frontier.empty()) {
    const pid_t p = frontier.back();
    frontier.pop_back();
    auto [begin, end] = children.equal_range(p);
    for (auto it = begin; it != end; ++it) {
      out.push_back(it->second);
      frontier.push_back(it->second);
    }
  }
  return out;
}

// Kills root's descendants, then root's group. The group is stopped first so that nothing forks
// meanwhile; a descendant that left the group (setsid) is found by parentage, which the worker
// keeps as a child subreaper even where its own child in between has died.
void kill_tree(pid_t root) {
  kill(-root, SIGSTOP);
  for (int round = 0; round < 4; ++round) {
    const auto all = descendants(root);
    if (all.empty()) break;
    for (pid_t p : all) kill(p, SIGKILL);
  }
  kill(-root, SIGKILL);
}

// The workers alive in this process, for kill_all.
std::mutex g_live_mu;
std::set<pid_t> g_live;

// write() to a child that may have died: EPIPE, never a SIGPIPE that would kill this process.
bool write_all(int fd, const std::string& bytes) {
  SigpipeBlocked no_sigpipe;
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += size_t(n);
  }
  return done == bytes.size();
}

// PR_SET_PDEATHSIG fires when the thread that forked ends, not the process: workers are forked
// from one thread that lasts as long as the process, so that the end of a compile thread does not
// kill a worker another thread is using. A forked child has no such thread and starts its own.
struct LastingThread {
  struct Job {
    const std::function<void()>* in_child;
    std::promise<pid_t> pid;
  };
  pid_t owner = getpid();
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Job*> jobs;
};

std::mutex g_lasting_mu;
LastingThread* g_lasting = nullptr;  // never destroyed: its thread may be waiting at exit

LastingThread& lasting_thread() {
  static std::once_flag atfork;  // no fork may copy g_lasting_mu while another thread holds it
  std::call_once(atfork, [] {
    pthread_atfork([] { g_lasting_mu.lock(); }, [] { g_lasting_mu.unlock(); }, [] { g_lasting_mu.unlock(); });
  });
  std::lock_guard lock(g_lasting_mu);
  if (!g_lasting || g_lasting->owner != getpid()) {
    auto* l = g_lasting = new LastingThread;
    std::thread([l] {
      for (;;) {
        std::unique_lock lock(l->mu);
        l->cv.wait(lock, [l] { return !l->jobs.empty(); });
        LastingThread::Job* job = l->jobs.front();
        l->jobs.pop_front();
        lock.unlock();
        const pid_t pid = fork();
        if (pid == 0) (*job->in_child)();  // does not return
        job->pid.set_value(pid);
      }
    }).detach();
  }
  return *g_lasting;
}

pid_t fork_from_lasting_thread(const std::function<void()>& in_child) {
  LastingThread& l = lasting_thread();
  LastingThread::Job job{&in_child, {}};
  auto pid = job.pid.get_future();
  {
    std::lock_guard lock(l.mu);
    l.jobs.push_back(&job);
  }
  l.cv.notify_one();
  return pid.get();
}

}  // namespace

WorkerProcess::WorkerProcess(std::vector<std::string> argv) : argv_(std::move(argv)) {}

WorkerProcess::~WorkerProcess() {
  if (pid_ > 0) {
    write_all(to_child_, nlohmann::json{{"op", "quit"}, {"id", 0}}.dump() + "\n");
    stop(false);
  }
}

void WorkerProcess::start() {
  int in[2], out[2];
  GF_CHECK(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0, "pipe failed: {}", strerror(errno));
  std::vector<char*> args;
  for (auto& a : argv_) args.push_back(a.data());
  args.push_back(nullptr);
  std::vector<std::string> env_strings{"GEMMFORGE_WORKER_FDS=3,4"};
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "GEMMFORGE_WORKER_FDS=", 21) != 0) env_strings.emplace_back(*e);
  std::vector<char*> env;
  for (auto& e : env_strings) env.push_back(e.data());
  env.push_back(nullptr);
  const pid_t parent = getpid();
  const pid_t pid = fork_from_lasting_thread([&] {
    // Only async-signal-safe calls from here to exec.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // dies with the parent ...
    if (getppid() != parent) _exit(126);  // ... also if the parent died before the line above
    prctl(PR_SET_CHILD_SUBREAPER, 1);     // what it starts stays its own to find and kill
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    dup2(STDERR_FILENO, STDOUT_FILENO);  // whatever it prints goes to the log, not the protocol
    // The channel onto fds 3 and 4, by way of fds above both (the pipes may hold 3 or 4 already,
    // and dup2 onto itself would keep O_CLOEXEC); dup2 gives the new fds no O_CLOEXEC.
    const int request = fcntl(in[0], F_DUPFD, 10), reply = fcntl(out[1], F_DUPFD, 10);
    dup2(request, kRequestFd);
    dup2(reply, kReplyFd);
    close(request);
    close(reply);
    execve(args[0], args.data(), env.data());
    _exit(127);
  });
  GF_CHECK(pid >= 0, "fork failed: {}", strerror(errno));
  setpgid(pid, pid);  // also here: the parent may signal the group before the child runs
  close(in[0]);
  close(out[1]);
  pid_ = pid;
  to_child_ = in[1];
  from_child_ = out[0];
  pending_.clear();
  scanned_ = 0;
  std::lock_guard lock(g_live_mu);
  g_live.insert(pid);
}

std::string WorkerProcess::stop(bool kill_now) {
  if (pid_ <= 0) return "not running";
  close(to_child_);
  close(from_child_);
  if (kill_now) kill_tree(pid_);
  // A worker told to quit (or whose channel closed) gets a few seconds to release the GPU, then
  // is killed. It is waited for without being reaped, so that its group id cannot have been
  // reused when the group is killed.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  siginfo_t info{};
  while (waitid(P_PID, id_t(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == 0) {
    if (std::chrono::steady_clock::now() > deadline) break;
    usleep(10000);
  }
  kill_tree(pid_);  // the worker past its deadline, and whatever it left running
  int status = 0;
  waitpid(pid_, &status, 0);
  {
    std::lock_guard lock(g_live_mu);
    g_live.erase(pid_);
  }
  pid_ = -1;
  return describe_status(status);
}

bool WorkerProcess::alive() {
  if (pid_ <= 0) return false;
  siginfo_t info{};
  if (waitid(P_PID, id_t(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid != 0) {
    stop(false);  // exited between calls: reap it (and anything it left)
    return false;
  }
  return true;
}

void WorkerProcess::kill_all() {
  std::lock_guard lock(g_live_mu);
  for (pid_t pid : g_live) kill_tree(pid);
}

nlohmann::json WorkerProcess::call(const nlohmann::json& request, double timeout_s) {
  if (!alive()) start();
  auto crashed = [&](const std::string& why) {
    return nlohmann::json{{"ok", false}, {"crashed", true}, {"error", why}};
  };
  const uint64_t id = next_id_++;
  nlohmann::json req = request;
  req["id"] = id;
  if (!write_all(to_child_, req.dump() + "\n")) return crashed("worker " + stop(true) + " before taking the request");

  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    // Every complete line: this request's reply, or (an id of another) one to drop, or a break.
    for (size_t nl; (nl = pending_.find('\n', scanned_)) != std::string::npos; scanned_ = 0) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object() || !j.contains("id")) {
        const std::string why = "worker broke the protocol with " + quote(line, 120);
        stop(true);
        return crashed(why);
      }
      if (j["id"] != id) continue;  // a reply to a request given up on
      j.erase("id");
      if (j.value("fatal", false)) j["error"] = j.value("error", "") + " (worker " + stop(false) + ")";
      return j;
    }
    scanned_ = pending_.size();
    if (pending_.size() > kMaxReplyBytes) {
      stop(true);
      return crashed(fmt::format("worker sent {} bytes without ending its reply (killed)", kMaxReplyBytes));
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

WorkerChannel::WorkerChannel() {
  const char* fds = std::getenv("GEMMFORGE_WORKER_FDS");
  if (!fds) return;
  const auto parts = split_list(fds);
  if (parts.size() != 2) return;
  const auto in = parse_int(parts[0]), out = parse_int(parts[1]);
  if (in && out) in_ = int(*in), out_ = int(*out);
}

WorkerChannel::~WorkerChannel() = default;

bool WorkerChannel::read(std::string& line) {
  while (true) {
    if (size_t nl = buffer_.find('\n'); nl != std::string::npos) {
      line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return true;
    }
    char buf[65536];
    const ssize_t n = ::read(in_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    buffer_.append(buf, size_t(n));
  }
}

void WorkerChannel::write(const nlohmann::json& reply) {
  write_all(out_, reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
}

void adopt_worker_duties() {
  // A thread takes the ending signals (blocked everywhere else), kills what the worker started,
  // and lets the signal end the worker.
  sigset_t ending;
  sigemptyset(&ending);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&ending, sig);
  pthread_sigmask(SIG_BLOCK, &ending, nullptr);
  // The parent's death now arrives as SIGTERM, so this thread, not the kernel's SIGKILL, ends
  // the worker, and what the worker started dies with it.
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  std::thread([ending] {
    int sig = 0;
    sigwait(&ending, &sig);
    for (pid_t p : descendants(getpid())) kill(p, SIGKILL);
    signal(sig, SIG_DFL);
    pthread_sigmask(SIG_UNBLOCK, &ending, nullptr);
    raise(sig);
  }).detach();
}

}  // namespace gf

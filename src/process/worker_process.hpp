#pragma once
// Worker processes: a child program that answers one JSON object per line, so that work which may
// fault or hang (a candidate kernel, a Triton compile) costs a restart, not the run.
//
// Requests and replies travel on a channel of their own (a pipe pair on the child's fds 3 and 4,
// named in GEMMFORGE_WORKER_FDS), never on stdout, which the child shares with whatever prints
// (device printf, library logs; it goes to the parent's stderr). Every request carries an id that
// its reply repeats. The child is a child subreaper in a process group of its own, and dies with
// the parent (PR_SET_PDEATHSIG); stopping it kills everything it started, also what left its group.
#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gf {

class WorkerProcess {
 public:
  explicit WorkerProcess(std::vector<std::string> argv);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Sends a request (adding its "id") and waits for its reply. If the worker dies, breaks the
  // protocol or does not answer within timeout_s, it is killed with everything it started, and
  // the reply is {"ok":false,"crashed":true,"error":WHY}. The next call starts a fresh worker.
  nlohmann::json call(const nlohmann::json& request, double timeout_s);
  // Starts the worker unless it runs, without a request: its start-up (a CUDA context) overlaps
  // what the caller does next.
  void warm() {
    if (!alive()) start();
  }
  // Whether the worker is running (one that has exited is reaped here).
  bool alive();
  pid_t pid() const { return pid_; }

  // Kills every worker this process started, and all they started: for a program about to die of
  // a signal (the CLI's SIGINT, SIGTERM and SIGHUP).
  static void kill_all();

 private:
  void start();
  std::string stop(bool kill_now);  // returns how the process ended

  std::vector<std::string> argv_;
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  uint64_t next_id_ = 1;
  std::string pending_;  // bytes read past the last reply
  size_t scanned_ = 0;   // of pending_, the bytes known to hold no newline
};

// The child's end: the channel GEMMFORGE_WORKER_FDS names, else stdin and stdout (a worker run by
// hand). Never throws.
class WorkerChannel {
 public:
  WorkerChannel();
  ~WorkerChannel();
  // The next request line; false at the end of the input.
  bool read(std::string& line);
  void write(const nlohmann::json& reply);

 private:
  int in_ = 0, out_ = 1;
  std::string buffer_;
};

// The parent-death and subreaper duties of a gemmforge worker: when the worker is told to end
// (SIGTERM, SIGINT, SIGHUP) or its parent dies, it first kills every process it started, then
// exits. A worker that does not adopt them still dies with its parent, but what it started may not.
void adopt_worker_duties();

}  // namespace gf

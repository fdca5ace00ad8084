#pragma once
// The parent's handle on one worker process: a child program that answers one JSON object per
// line. Candidates run in such workers, so that one that faults or hangs costs a restart, not the
// run; the Triton backend compiles in a pool of them.
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

  // Sends a request and waits for the reply. If the worker dies or does not answer within
  // timeout_s, it is killed and the reply is {"ok":false,"crashed":true,"error":WHY}.
  nlohmann::json call(const nlohmann::json& request, double timeout_s);
  bool alive() const { return pid_ > 0; }

 private:
  void start();
  std::string stop(bool kill_now);  // returns how the process ended

  std::vector<std::string> argv_;
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1;
  std::string pending_;  // bytes read past the last reply
};

}  // namespace gf

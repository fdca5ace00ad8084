#pragma once
// Candidates run in a worker process, so that one that faults (illegal address, a corrupted
// context) or hangs costs a restart, not the tuning run. The worker is this same program run
// with the argument "__worker"; it speaks one JSON object per line on stdin/stdout:
//
//   {"op":"problem","problem":KEY,"seed":N}                 -> {"ok":true}
//   {"op":"measure","backend":B,"candidate":{...},"time":true,"timing":{...}}
//                                                            -> {"ok":true,"verified":..,"us":..,...}
//   {"op":"quit"}
//
// A reply with "fatal":true means the worker's CUDA context is lost; it exits after replying.
#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace gf::tune {

// The child's loop. Returns the process exit code.
int worker_main();

// Call first in main(): runs the worker loop and exits when argv[1] is "__worker".
void maybe_run_worker(int argc, char** argv);

// The parent's handle on one worker process.
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

}  // namespace gf::tune

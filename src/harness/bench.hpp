#pragma once
// One problem of any kernel family set up on the GPU for measuring its candidates: random input
// sets (rotated past the L2 while timing), the reference output, and one way of measuring for
// every family: each family binds a kernel to its buffers (a Trial), and Bench measures Trials.
#include <cuda_runtime_api.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/check.hpp"
#include "gemmforge/backend.hpp"
#include "harness/timer.hpp"

namespace gf::harness {

// Input sets of set_bytes each, enough that one rotation overflows the L2 three times: at most
// `most`, and within a quarter of the device's memory.
int rotating_sets(double set_bytes, const DeviceInfo& device, int most);

struct MeasureResult {
  bool verified = false;
  double rel_err = -1;
  double us = 0;        // flushed mode: the median launch
  double graph_us = 0;  // graph mode (when asked): per launch, back to back
  int reps = 0;
  std::string error;  // "" when verified (and timed, if asked)
};

// What a bench checks an output against: the reference and the guard bands. "" when it passes.
struct Verdict {
  std::string error;
  double rel_err = -1;
};

// A kernel bound to a bench's buffers.
struct Trial {
  std::function<void()> poison;     // the outputs to NaN, their guard bands to the pattern
  std::function<void(int)> launch;  // one launch reading input set `set`
  std::function<Verdict()> verify;  // the verdict on the outputs now
  std::function<void()> reset;      // before a launch that follows another kernel's (may be empty)
  std::shared_ptr<void> owned;      // the kernel the closures launch, when the trial owns it
};

class Bench {
 public:
  virtual ~Bench() = default;
  // Builds the candidate's kernel (or takes the one built before) and measures it: CUDA errors
  // propagate as gf::Error; a wrong result is a MeasureResult with an error (measure_trial).
  MeasureResult measure(const Candidate& candidate, bool time, const TimingOptions& timing);
  // Times the candidates against each other in one race (Timer::race), then verifies each once
  // more, over two launches on an unreset workspace: the results in their order. Meant for
  // candidates measure() verified just before.
  std::vector<MeasureResult> race(const std::vector<Candidate>& candidates, const RaceOptions& o);
  virtual int sets() const = 0;
  virtual cudaStream_t stream() const = 0;

 protected:
  explicit Bench(int64_t l2_bytes) : timer_(l2_bytes) {}
  // The candidate's kernel, built by its family's backend, bound to this bench's buffers.
  virtual Trial trial(const Candidate& candidate) = 0;
  // How every kernel is measured: its outputs poisoned (NaN) and guarded, one launch on input set
  // 0, verified; then, if asked, timed over the rotating sets, the outputs poisoned again before
  // the last timed launch (on set 0), and verified once more, guard bands included: a kernel that
  // races, depends on what an earlier launch left behind, stops writing, or writes past its
  // outputs fails. With timing.graph it is timed back to back in a CUDA graph too, and verified
  // after that.
  MeasureResult measure_trial(const Trial& t, bool time, const TimingOptions& timing);

 private:
  Trial& built(const Candidate& candidate);
  Timer timer_;
  std::map<std::string, Trial> built_;  // by candidate id: measured once, raced later
};

// The bench for a problem of a family ("gemm", "rowop") given by its key. Throws gf::Error.
std::unique_ptr<Bench> make_bench(std::string_view family, const std::string& key, const DeviceInfo& device,
                                  uint64_t seed);

}  // namespace gf::harness

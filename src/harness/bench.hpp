#pragma once
// One problem of any kernel family set up on the GPU for measuring its candidates: random input
// sets (rotated past the L2 while timing), the reference output, and one way of measuring for
// every family (measure_kernel).
#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <string_view>

#include "cuda/check.hpp"
#include "gemmforge/backend.hpp"
#include "harness/timer.hpp"

namespace gf::harness {

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

class Bench {
 public:
  virtual ~Bench() = default;
  // Builds the candidate's kernel with its family's backend and measures it (measure_kernel).
  // CUDA errors propagate as gf::Error; a wrong result is a MeasureResult with an error.
  virtual MeasureResult measure(const Candidate& candidate, bool time, const TimingOptions& timing) = 0;
  virtual int sets() const = 0;
};

// The bench for a problem of a family ("gemm", "rowop") given by its key. Throws gf::Error.
std::unique_ptr<Bench> make_bench(std::string_view family, const std::string& key, const DeviceInfo& device,
                                  uint64_t seed);

// How every kernel is measured: its outputs poisoned (NaN) and guarded, one launch on input set
// 0, verified; then, if asked, timed over the rotating sets, the outputs poisoned again before the
// last timed launch (on set 0), and verified once more, guard bands included: a kernel that races,
// depends on what an earlier launch left behind, stops writing, or writes past its outputs fails.
// With timing.graph it is timed back to back in a CUDA graph too, and verified after that.
//   poison(): fills the outputs with NaN and their guard bands with the pattern
//   launch(set): one launch reading input set `set`
//   verify(): the verdict on the outputs now
template <class Poison, class Launch, class Verify>
MeasureResult measure_kernel(Poison poison, Launch launch, Verify verify, Timer& timer, int sets, cudaStream_t stream,
                             bool time, const TimingOptions& timing) {
  MeasureResult r;
  poison();
  launch(0);
  GF_CUDA_CHECK(cudaGetLastError());
  GF_CUDA_CHECK(cudaStreamSynchronize(stream));
  Verdict first = verify();
  r.rel_err = first.rel_err;
  r.error = first.error;
  r.verified = r.error.empty();
  if (!r.verified || !time) return r;
  Timing t = timer.time(launch, sets, stream, timing, poison);
  if (Verdict after = verify(); !after.error.empty()) {
    r.verified = false;
    r.error = "after timing: " + after.error;
    return r;
  }
  r.us = t.median_us;
  r.reps = t.reps;
  if (timing.graph) {
    r.graph_us = timer.time_graph(launch, sets, stream, timing).median_us;
    poison();
    launch(0);
    GF_CUDA_CHECK(cudaStreamSynchronize(stream));
    if (Verdict again = verify(); !again.error.empty()) {
      r.verified = false;
      r.error = "after the graph's launches: " + again.error;
    }
  }
  return r;
}

}  // namespace gf::harness

#pragma once
// One problem on the GPU: random input sets (rotated while timing), the fp32 reference output,
// and measure(): poison the output, launch once, verify, then time.
#include <memory>
#include <string>
#include <vector>

#include "cuda/memory.hpp"
#include "gemmforge/backend.hpp"
#include "harness/verify.hpp"
#include "harness/timer.hpp"

namespace gf::tune {

struct MeasureResult {
  bool verified = false;
  double rel_err = -1;
  double us = 0;
  int reps = 0;
  std::string error;  // "" when verified (and timed, if asked)
};

class ProblemBench {
 public:
  ProblemBench(const GemmProblem& p, const DeviceInfo& device, uint64_t seed);
  // Verifies the kernel against the reference and, if it passes and `time` is set, times it.
  // CUDA errors propagate as gf::Error; a wrong result is a MeasureResult with an error.
  MeasureResult measure(Kernel& kernel, bool time, const TimingOptions& timing);
  GemmArgs args(int set) const;
  int sets() const { return int(sets_.size()); }
  cudaStream_t stream() const { return stream_.get(); }
  const GemmProblem& problem() const { return problem_; }
  const float* reference() const { return ref_.as<float>(); }

 private:
  struct InputSet {
    cuda::DeviceBuffer a, b, c, bias, scale_a, scale_b;
  };
  GemmProblem problem_;
  cuda::Stream stream_;
  std::vector<InputSet> sets_;
  cuda::DeviceBuffer d_, g_, ref_, workspace_;
  Timer timer_;
};

}  // namespace gf::tune

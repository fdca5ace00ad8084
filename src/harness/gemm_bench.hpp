#pragma once
// A GEMM on the GPU: random input sets, the fp32 reference output, and a guarded output.
#include <memory>
#include <string>
#include <vector>

#include "cuda/memory.hpp"
#include "harness/bench.hpp"

namespace gf::harness {

class GemmBench final : public Bench {
 public:
  GemmBench(const GemmProblem& p, const DeviceInfo& device, uint64_t seed);
  using Bench::measure;
  // Measures a kernel built by the caller (the GPU tests).
  MeasureResult measure(Kernel& kernel, bool time, const TimingOptions& timing) {
    return measure_trial(bind(kernel), time, timing);
  }
  int sets() const override { return int(sets_.size()); }
  GemmArgs args(int set) const;
  cudaStream_t stream() const override { return stream_.get(); }
  const GemmProblem& problem() const { return problem_; }
  const float* reference() const { return ref_.as<float>(); }

 private:
  struct InputSet {
    cuda::DeviceBuffer a, b, c, bias, scale_a, scale_b;
  };
  Trial trial(const Candidate& candidate) override;
  Trial bind(Kernel& kernel);  // the trial does not own the kernel
  size_t d_bytes() const;

  GemmProblem problem_;
  cuda::Stream stream_;
  std::vector<InputSet> sets_;
  cuda::DeviceBuffer d_, ref_, workspace_;  // d_: D, then its guard band
  cuda::DeviceBuffer scale_d_;                // an fp8 D's scale (reference_fp8_output)
};

}  // namespace gf::harness

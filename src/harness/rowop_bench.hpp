#pragma once
// A row op on the GPU: random input sets (rotated past the L2), the float64 reference, and
// guarded outputs.
#include <string>
#include <vector>

#include "cuda/memory.hpp"
#include "harness/bench.hpp"

namespace gf::harness {

class RowOpBench final : public Bench {
 public:
  RowOpBench(const RowOpSpec& spec, const DeviceInfo& device, uint64_t seed);
  using Bench::measure;
  // Measures a kernel built by the caller (the GPU tests).
  MeasureResult measure(RowOpKernel& kernel, bool time, const TimingOptions& timing) {
    return measure_trial(bind(kernel), time, timing);
  }
  int sets() const override { return int(sets_.size()); }
  RowOpArgs args(int set) const;
  cudaStream_t stream() const override { return stream_.get(); }
  const float* reference() const { return ref_.as<float>(); }

 private:
  struct InputSet {
    cuda::DeviceBuffer x, residual;
  };
  Trial trial(const Candidate& candidate) override;
  Trial bind(RowOpKernel& kernel);  // the trial does not own the kernel
  RowOpSpec spec_;
  cuda::Stream stream_;
  std::vector<InputSet> sets_;
  // y_ and residual_out_ end in their guard bands.
  cuda::DeviceBuffer y_, residual_out_, weight_, bias_, valid_len_, ref_, ref_residual_;
};

}  // namespace gf::harness

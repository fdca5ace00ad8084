#pragma once
// Measuring row-op kernels: random inputs (rotated past the L2), the float64 reference, verify
// then time with the shared Timer; and the tuning loop over the config space.
#include <functional>
#include <string>
#include <vector>

#include "cuda/memory.hpp"
#include "gemmforge/device.hpp"
#include "backends/rowop/native/kernel.hpp"
#include "harness/timer.hpp"

namespace gf::ops {

struct RowMeasurement {
  RowConfig config;
  std::string name;
  bool verified = false;
  double us = 0;
  double tbps = 0;  // bytes read + written per second / 1e12
  double rel_err = -1;
  int64_t ctas = 0;  // CTAs launched (see RowKernel::ctas)
  double compile_seconds = 0;
  std::string error;
};

class RowOpBench {
 public:
  RowOpBench(const RowOpSpec& spec, const DeviceInfo& device, uint64_t seed);
  RowMeasurement measure(const RowKernel& kernel, bool time, const tune::TimingOptions& timing);
  RowOpArgs args(int set) const;
  cudaStream_t stream() const { return stream_.get(); }
  const float* reference() const { return ref_.as<float>(); }

 private:
  struct InputSet {
    cuda::DeviceBuffer x, residual;
  };
  RowOpSpec spec_;
  cuda::Stream stream_;
  std::vector<InputSet> sets_;
  cuda::DeviceBuffer y_, residual_out_, weight_, bias_, valid_len_, ref_, ref_residual_;
  tune::Timer timer_;
};

// Compiles the spec's configs (of those whose names contain one of the comma-separated texts of
// `only`, the first max_configs, a config and its pair-max twin counting as one) in parallel and
// measures each; the result is sorted, fastest verified first (empty when no name matches).
// progress(done, total) is called as configs finish.
std::vector<RowMeasurement> tune_row_op(const RowOpSpec& spec, const DeviceInfo& device, int max_configs,
                                        const std::function<void(int, int)>& progress = {},
                                        const std::string& only = "");

// Device-to-device copy bandwidth (bytes read + written per second, / 1e12) over 2 GiB.
double copy_bandwidth_tbps(const DeviceInfo& device);

}  // namespace gf::ops

#pragma once
// The device-to-device copy that memory-bound kernels are judged against, timed by the same
// harness as they are.
#include <cstddef>

#include "gemmforge/device.hpp"

namespace gf::harness {

// Copy bandwidth over 2 GiB: bytes read + written per second, / 1e12.
double copy_bandwidth_tbps(const DeviceInfo& device);

// A copy that moves `bytes` (half read, half written) timed as the bench times a kernel: one
// launch after an L2 flush (us), and back to back over rotating buffer pairs that overflow the L2
// three times, as a GEMM's input sets do (graph_us: per copy; queued, not captured). A decode
// GEMM's bytes move no faster than this: small copies do not reach the large-buffer bandwidth above.
struct CopyTiming {
  double us = 0, graph_us = 0;
};
CopyTiming copy_timing(const DeviceInfo& device, size_t bytes);

}  // namespace gf::harness

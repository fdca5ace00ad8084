#include "harness/copy_bench.hpp"

#include <algorithm>
#include <vector>

#include "cuda/memory.hpp"
#include "harness/bench.hpp"
#include "harness/timer.hpp"

namespace gf::harness {
namespace {

void copy(const cuda::DeviceBuffer& dst, const cuda::DeviceBuffer& src, size_t bytes, cudaStream_t stream) {
  GF_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, stream));
}

}  // namespace

double copy_bandwidth_tbps(const DeviceInfo& device) {
  const size_t bytes = size_t(1) << 31;
  cuda::DeviceBuffer src(bytes), dst(bytes);
  cuda::Stream stream;
  GF_CUDA_CHECK(cudaMemsetAsync(src.get(), 1, bytes, stream.get()));
  Timer timer(device.l2_bytes);
  Timing t = timer.time([&](int) { copy(dst, src, bytes, stream.get()); }, 1, stream.get(),
                        {.warmup = 2, .min_reps = 10, .max_reps = 20, .budget_ms = 50});
  return 2.0 * double(bytes) / (t.median_us * 1e-6) / 1e12;
}

CopyTiming copy_timing(const DeviceInfo& device, size_t bytes) {
  const size_t half = std::max<size_t>(bytes / 2, 256);
  const int sets = rotating_sets(double(2 * half), device, 16);
  cuda::Stream stream;
  std::vector<cuda::DeviceBuffer> src, dst;
  for (int s = 0; s < sets; ++s) {
    src.emplace_back(half);
    dst.emplace_back(half);
    GF_CUDA_CHECK(cudaMemsetAsync(src.back().get(), 1, half, stream.get()));
  }
  auto launch = [&](int s) { copy(dst[size_t(s)], src[size_t(s)], half, stream.get()); };
  Timer timer(device.l2_bytes);
  // Back to back queued, not captured: a captured 1 GB copy ran on a copy engine at 2.8 TB/s
  // against 4.2 launched. Each copy takes longer than its enqueue, so none waits on the host.
  return {.us = timer.time(launch, sets, stream.get(), {.min_reps = 20, .budget_ms = 50}).median_us,
          .graph_us = timer.time_queued(launch, sets, stream.get(), 7).median_us};
}

}  // namespace gf::harness

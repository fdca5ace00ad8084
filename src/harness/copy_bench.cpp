#include "harness/copy_bench.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "cuda/memory.hpp"
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
  const int sets = int(std::clamp(std::ceil(3.0 * double(device.l2_bytes) / double(2 * half)), 1.0, 16.0));
  cuda::Stream stream;
  std::vector<cuda::DeviceBuffer> src, dst;
  for (int s = 0; s < sets; ++s) {
    src.emplace_back(half);
    dst.emplace_back(half);
    GF_CUDA_CHECK(cudaMemsetAsync(src.back().get(), 1, half, stream.get()));
  }
  auto launch = [&](int s) { copy(dst[size_t(s)], src[size_t(s)], half, stream.get()); };
  Timer timer(device.l2_bytes);
  CopyTiming t{.us = timer.time(launch, sets, stream.get(), {.min_reps = 20, .budget_ms = 50}).median_us};
  // Back to back: queued without a graph, since a captured copy becomes a memcpy node, which the
  // driver may run on a copy engine (a 1 GB one read 2.8 TB/s that way, 4.2 launched). Each copy
  // takes longer than its enqueue, so none waits on the host. The median of 7 batches.
  const int per_batch = sets * ((16 + sets - 1) / sets);
  std::vector<double> batches;
  cuda::Event begin, end;
  for (int b = 0; b < 8; ++b) {
    begin.record(stream.get());
    for (int i = 0; i < per_batch; ++i) launch(i % sets);
    end.record(stream.get());
    GF_CUDA_CHECK(cudaStreamSynchronize(stream.get()));
    if (b > 0) batches.push_back(1000.0 * end.since(begin) / per_batch);  // the first warms up
  }
  std::sort(batches.begin(), batches.end());
  t.graph_us = batches[batches.size() / 2];
  return t;
}

}  // namespace gf::harness

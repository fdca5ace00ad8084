#include <fmt/format.h>

#include <algorithm>

#include "cuda/check.hpp"
#include "harness/launch_probe.hpp"
#include "harness/timer.hpp"

namespace gf::harness {
namespace {

// Does nothing, with the shared memory and cluster it is launched with: what is left of its time
// is the launch, the CTAs' setup (the SM's shared-memory carve-out among it) and their retirement.
__global__ void empty_kernel(int never) {
  extern __shared__ unsigned char smem[];
  if (never == 1) smem[threadIdx.x] = 1;  // never true: the shared memory stays the kernel's
}

void launch_empty(const LaunchShape& s, cudaStream_t stream) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(unsigned(s.ctas));
  config.blockDim = dim3(unsigned(s.threads));
  config.dynamicSmemBytes = size_t(s.smem_bytes);
  config.stream = stream;
  cudaLaunchAttribute cluster{};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = unsigned(s.cluster);
  cluster.val.clusterDim.y = 1;
  cluster.val.clusterDim.z = 1;
  config.attrs = &cluster;
  config.numAttrs = s.cluster > 1 ? 1 : 0;
  GF_CUDA_CHECK(cudaLaunchKernelEx(&config, empty_kernel, 0));
}

}  // namespace

std::vector<LaunchShape> decode_launch_shapes(const DeviceInfo& device) {
  const int sms = std::max(device.sm_count, 1);
  const int ring = 130 * 1024;  // a 64x16 swap-AB kernel's 12 stages, about
  const int most = std::min(200 * 1024, int(device.smem_per_block_optin));
  return {
      {.name = "every SM, 384 threads, no shared memory", .ctas = sms, .threads = 384},
      {.name = "every SM, 384 threads, 200 KiB", .ctas = sms, .threads = 384, .smem_bytes = most},
      {.name = "every SM, 384 threads, 200 KiB, pairs",
       .ctas = sms / 2 * 2,
       .threads = 384,
       .smem_bytes = most,
       .cluster = 2},
      {.name = "64 CTAs, 128 threads, no shared memory", .ctas = 64, .threads = 128},
      {.name = "64 CTAs, 128 threads, 130 KiB", .ctas = 64, .threads = 128, .smem_bytes = ring},
  };
}

std::vector<LaunchCost> time_launches(const std::vector<LaunchShape>& shapes, const DeviceInfo& device) {
  GF_CUDA_CHECK(cudaFuncSetAttribute(empty_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     int(device.smem_per_block_optin)));
  cuda::Stream stream;
  Timer timer(device.l2_bytes);
  const TimingOptions options{.warmup_ms = 20, .min_reps = 50, .max_reps = 200, .budget_ms = 5};
  std::vector<LaunchCost> costs;
  for (const LaunchShape& s : shapes) {
    auto launch = [&](int) { launch_empty(s, stream.get()); };
    costs.push_back({.shape = s,
                     .single_us = timer.time(launch, 1, stream.get(), options).median_us,
                     .graph_us = timer.time_graph(launch, 1, stream.get(), options).median_us});
  }
  return costs;
}

}  // namespace gf::harness

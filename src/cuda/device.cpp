#include "gemmforge/device.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

namespace gf {

DeviceInfo DeviceInfo::query(int ordinal) {
  DeviceInfo d;
  d.ordinal = ordinal;
  cudaRuntimeGetVersion(&d.runtime_version);
  cudaError_t err = cudaDriverGetVersion(&d.driver_version);
  if (err != cudaSuccess || d.driver_version == 0) {
    d.absent_reason = "no CUDA driver found (libcuda.so.1 is not installed or not loadable)";
    return d;
  }
  int count = 0;
  err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    d.absent_reason = fmt::format("no GPU found ({})", err == cudaSuccess ? "0 devices" : cudaGetErrorString(err));
    cudaGetLastError();
    return d;
  }
  if (ordinal >= count) {
    d.absent_reason = fmt::format("GPU {} requested but only {} present", ordinal, count);
    return d;
  }
  cudaDeviceProp p{};
  err = cudaGetDeviceProperties(&p, ordinal);
  if (err != cudaSuccess) {
    d.absent_reason = fmt::format("cudaGetDeviceProperties failed: {}", cudaGetErrorString(err));
    return d;
  }
  d.present = true;
  d.name = p.name;
  d.sm_count = p.multiProcessorCount;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.l2_bytes = p.l2CacheSize;
  d.global_mem_bytes = int64_t(p.totalGlobalMem);
  d.smem_per_block_optin = int(p.sharedMemPerBlockOptin);
  return d;
}

DeviceInfo DeviceInfo::assumed_hopper() {
  DeviceInfo d;
  d.present = false;
  d.absent_reason = "no GPU: assuming an H100/H200 (sm_90a, 132 SMs)";
  d.name = "assumed sm_90a";
  d.sm_count = 132;
  d.cc_major = 9;
  d.cc_minor = 0;
  d.l2_bytes = 50 << 20;
  d.smem_per_block_optin = 227 * 1024;
  return d;
}

std::string DeviceInfo::fingerprint() const {
  return fmt::format("{}|sm{}{}|{}sm|driver {}|cuda {}", name, cc_major, cc_minor, sm_count, driver_version,
                     runtime_version);
}

std::string DeviceInfo::describe() const {
  if (!present) return absent_reason;
  return fmt::format("{} (sm_{}{}, {} SMs, {:.0f} GiB, L2 {} MiB, driver {}.{}, CUDA runtime {}.{})", name, cc_major,
                     cc_minor, sm_count, global_mem_bytes / double(1 << 30), l2_bytes >> 20, driver_version / 1000,
                     driver_version % 1000 / 10, runtime_version / 1000, runtime_version % 1000 / 10);
}

}  // namespace gf

#pragma once
#include <cstdint>
#include <string>

namespace gf {

// What the tuner and the backends need to know of a GPU. Queried without throwing: on a machine
// with no driver or no GPU, present is false and absent_reason says why.
struct DeviceInfo {
  bool present = false;
  std::string absent_reason;
  int ordinal = 0;
  std::string name;
  int sm_count = 0;
  int cc_major = 0, cc_minor = 0;
  int64_t l2_bytes = 0;
  int64_t global_mem_bytes = 0;
  int smem_per_block_optin = 0;
  int driver_version = 0;   // e.g. 13000
  int runtime_version = 0;  // CUDA runtime linked into the binary

  static DeviceInfo query(int ordinal = 0);
  // The device the candidate spaces assume when there is no GPU: an H100/H200 (sm_90a).
  static DeviceInfo assumed_hopper();
  // "NVIDIA H200|sm90|132sm|driver 13000|cuda 13000": with the backends' versions, the key under
  // which tuning decisions are stored.
  std::string fingerprint() const;
  std::string describe() const;
};

}  // namespace gf

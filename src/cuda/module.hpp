#pragma once
// A loaded cubin and one kernel in it, through the lazily reached driver API.
#include <cuda.h>
#include <vector_types.h>

#include <cstdint>
#include <string>

namespace gf::cuda {

class Module {
 public:
  Module() = default;
  explicit Module(const std::string& cubin);
  ~Module();
  Module(Module&& o) noexcept;
  Module& operator=(Module&& o) noexcept;
  CUfunction function(const char* name) const;

 private:
  CUmodule mod_ = nullptr;
};

struct LaunchConfig {
  dim3 grid{1, 1, 1};
  dim3 block{1, 1, 1};
  unsigned smem_bytes = 0;
  dim3 cluster{1, 1, 1};
  // Programmatic dependent launch: the kernel may start while the stream's previous kernel still
  // runs, and must execute griddepcontrol.wait before touching what that kernel writes.
  bool pdl = false;
};

// Lets fn use more than 48 KiB of dynamic shared memory. Call once, when the kernel is loaded.
void set_max_dynamic_smem(CUfunction fn, unsigned bytes);
// Lets fn run in clusters of more than the portable 8 CTAs (up to 16 on Hopper).
void allow_large_clusters(CUfunction fn);
// How many clusters of cfg's shape (CTAs, for clusters of one) can be resident at once: the size
// of a persistent grid, in clusters.
int max_active_clusters(CUfunction fn, const LaunchConfig& cfg);
// The current device's L2 cache size in bytes.
int64_t l2_bytes();
// cuLaunchKernelEx with the cluster dimensions as a launch attribute.
void launch(CUfunction fn, const LaunchConfig& cfg, void** args, CUstream stream);

}  // namespace gf::cuda

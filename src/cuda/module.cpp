#include "cuda/module.hpp"

#include <cuda_runtime_api.h>

#include <utility>

#include "cuda/check.hpp"
#include "cuda/driver.hpp"

namespace gf::cuda {

Module::Module(const std::string& cubin) {
  // The driver API loads into the calling thread's current context, which only a runtime call
  // makes current: a program whose first GPU work is a gemmforge kernel load (a Runtime's first
  // call, measured on the H200) got "invalid device context". cudaFree(nullptr) makes the device's
  // primary context current and does nothing else.
  GF_CUDA_CHECK(cudaFree(nullptr));
  GF_CU_CHECK(driver().cuModuleLoadData(&mod_, cubin.data()));
}

Module::~Module() {
  if (mod_) driver().cuModuleUnload(mod_);
}

Module::Module(Module&& o) noexcept : mod_(std::exchange(o.mod_, nullptr)) {}

Module& Module::operator=(Module&& o) noexcept {
  std::swap(mod_, o.mod_);
  return *this;
}

CUfunction Module::function(const char* name) const {
  CUfunction fn = nullptr;
  GF_CU_CHECK(driver().cuModuleGetFunction(&fn, mod_, name));
  return fn;
}

void set_max_dynamic_smem(CUfunction fn, unsigned bytes) {
  GF_CU_CHECK(driver().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(bytes)));
}

void allow_large_clusters(CUfunction fn) {
  GF_CU_CHECK(driver().cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
}

namespace {
// attrs: room for two attributes.
CUlaunchConfig to_driver(const LaunchConfig& cfg, CUlaunchAttribute* attrs, CUstream stream) {
  CUlaunchConfig lc{};
  lc.gridDimX = cfg.grid.x, lc.gridDimY = cfg.grid.y, lc.gridDimZ = cfg.grid.z;
  lc.blockDimX = cfg.block.x, lc.blockDimY = cfg.block.y, lc.blockDimZ = cfg.block.z;
  lc.sharedMemBytes = cfg.smem_bytes;
  lc.hStream = stream;
  lc.attrs = attrs;
  lc.numAttrs = 0;
  if (cfg.cluster.x * cfg.cluster.y * cfg.cluster.z > 1) {
    CUlaunchAttribute& a = attrs[lc.numAttrs++];
    a.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    a.value.clusterDim.x = cfg.cluster.x;
    a.value.clusterDim.y = cfg.cluster.y;
    a.value.clusterDim.z = cfg.cluster.z;
  }
  if (cfg.pdl) {
    CUlaunchAttribute& a = attrs[lc.numAttrs++];
    a.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    a.value.programmaticStreamSerializationAllowed = 1;
  }
  return lc;
}
}  // namespace

int max_active_clusters(CUfunction fn, const LaunchConfig& cfg) {
  if (cfg.cluster.x * cfg.cluster.y * cfg.cluster.z == 1) {
    int per_sm = 0, device = 0, sms = 0;
    GF_CU_CHECK(driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, fn, int(cfg.block.x * cfg.block.y * cfg.block.z), cfg.smem_bytes));
    GF_CUDA_CHECK(cudaGetDevice(&device));
    GF_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return per_sm * sms;
  }
  CUlaunchAttribute attrs[2];
  CUlaunchConfig lc = to_driver(cfg, attrs, nullptr);
  int n = 0;
  GF_CU_CHECK(driver().cuOccupancyMaxActiveClusters(&n, fn, &lc));
  return n;
}

int64_t l2_bytes() {
  int device = 0, bytes = 0;
  GF_CUDA_CHECK(cudaGetDevice(&device));
  GF_CUDA_CHECK(cudaDeviceGetAttribute(&bytes, cudaDevAttrL2CacheSize, device));
  return bytes;
}

void launch(CUfunction fn, const LaunchConfig& cfg, void** args, CUstream stream) {
  CUlaunchAttribute attrs[2];
  CUlaunchConfig lc = to_driver(cfg, attrs, stream);
  GF_CU_CHECK(driver().cuLaunchKernelEx(&lc, fn, args, nullptr));
}

}  // namespace gf::cuda

#include "cuda/driver.hpp"

#include <cuda_runtime_api.h>

#include <mutex>

#include "cuda/check.hpp"

namespace gf::cuda {
namespace {

template <class Fn>
void resolve(Fn& fn, const char* symbol, int version) {
  void* ptr = nullptr;
  cudaDriverEntryPointQueryResult status{};
  cudaError_t err = cudaGetDriverEntryPointByVersion(symbol, &ptr, version, cudaEnableDefault, &status);
  GF_CHECK(err == cudaSuccess && status == cudaDriverEntryPointSuccess && ptr,
           "driver entry point {} (CUDA {}) is unavailable: {}", symbol, version, cudaGetErrorString(err));
  fn = reinterpret_cast<Fn>(ptr);
}

}  // namespace

const char* driver_error_string(CUresult r) {
  const char* s = nullptr;
  try {
    if (driver().cuGetErrorString(r, &s) == CUDA_SUCCESS && s) return s;
  } catch (const Error&) {
  }
  return "unknown driver error";
}

const Driver& driver() {
  static Driver d;
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    try {
      resolve(d.cuGetErrorString, "cuGetErrorString", 12000);
      resolve(d.cuModuleLoadData, "cuModuleLoadData", 12000);
      resolve(d.cuModuleUnload, "cuModuleUnload", 12000);
      resolve(d.cuModuleGetFunction, "cuModuleGetFunction", 12000);
      resolve(d.cuFuncSetAttribute, "cuFuncSetAttribute", 12000);
      resolve(d.cuFuncGetAttribute, "cuFuncGetAttribute", 12000);
      resolve(d.cuLaunchKernelEx, "cuLaunchKernelEx", 12000);
      resolve(d.cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled", 12000);
      resolve(d.cuOccupancyMaxActiveClusters, "cuOccupancyMaxActiveClusters", 12000);
      resolve(d.cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor", 12000);
    } catch (const Error& e) {
      failure = e.what();
    }
  });
  GF_CHECK(failure.empty(), "{}", failure);
  return d;
}

}  // namespace gf::cuda

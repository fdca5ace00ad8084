#pragma once
// The driver API, reached lazily through the CUDA runtime's entry-point lookup, so that the
// binary starts (and everything that needs no GPU works) on machines without libcuda.so.1.
#include <cuda.h>

namespace gf::cuda {

struct Driver {
  decltype(&::cuGetErrorString) cuGetErrorString = nullptr;
  decltype(&::cuModuleLoadData) cuModuleLoadData = nullptr;
  decltype(&::cuModuleUnload) cuModuleUnload = nullptr;
  decltype(&::cuModuleGetFunction) cuModuleGetFunction = nullptr;
  decltype(&::cuFuncSetAttribute) cuFuncSetAttribute = nullptr;
  decltype(&::cuFuncGetAttribute) cuFuncGetAttribute = nullptr;
  decltype(&::cuLaunchKernelEx) cuLaunchKernelEx = nullptr;
  decltype(&::cuTensorMapEncodeTiled) cuTensorMapEncodeTiled = nullptr;
  decltype(&::cuOccupancyMaxActiveClusters) cuOccupancyMaxActiveClusters = nullptr;
  decltype(&::cuOccupancyMaxActiveBlocksPerMultiprocessor) cuOccupancyMaxActiveBlocksPerMultiprocessor = nullptr;
};

// Resolves every entry point on first use. Throws gf::Error when there is no usable driver.
const Driver& driver();

}  // namespace gf::cuda

#pragma once
// Check macros, one per CUDA API. Each names the call that failed and the error it returned.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include "gemmforge/error.hpp"

namespace gf::cuda {
const char* driver_error_string(CUresult r);  // safe to call with no driver
}

#define GF_CUDA_CHECK(expr)                                                                                      \
  do {                                                                                                           \
    cudaError_t gf_err_ = (expr);                                                                                \
    if (gf_err_ != cudaSuccess) GF_FAIL("{} failed: {} ({})", #expr, cudaGetErrorString(gf_err_), int(gf_err_)); \
  } while (0)

#define GF_CU_CHECK(expr)                                                                           \
  do {                                                                                              \
    CUresult gf_err_ = (expr);                                                                      \
    if (gf_err_ != CUDA_SUCCESS)                                                                    \
      GF_FAIL("{} failed: {} ({})", #expr, ::gf::cuda::driver_error_string(gf_err_), int(gf_err_)); \
  } while (0)

#define GF_NVRTC_CHECK(expr)                                                                     \
  do {                                                                                           \
    nvrtcResult gf_err_ = (expr);                                                                \
    if (gf_err_ != NVRTC_SUCCESS) GF_FAIL("{} failed: {}", #expr, nvrtcGetErrorString(gf_err_)); \
  } while (0)

#pragma once
// Typed dispatch for the harness's nvcc-built kernels: a DType to its C++ element type, and the
// grid of a grid-stride loop.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cstdint>

#include "gemmforge/dtype.hpp"

namespace gf::harness {

// Calls fn with a null pointer of the C++ type for t.
template <class Fn>
void dispatch(DType t, Fn&& fn) {
  switch (t) {
    case DType::f32:
      return fn(static_cast<float*>(nullptr));
    case DType::f16:
      return fn(static_cast<__half*>(nullptr));
    case DType::bf16:
      return fn(static_cast<__nv_bfloat16*>(nullptr));
    case DType::e4m3:
      return fn(static_cast<__nv_fp8_e4m3*>(nullptr));
    case DType::e5m2:
      return fn(static_cast<__nv_fp8_e5m2*>(nullptr));
  }
}

inline unsigned grid_for(int64_t count, int threads) {
  return unsigned(std::min<int64_t>((count + threads - 1) / threads, 65536));
}

}  // namespace gf::harness

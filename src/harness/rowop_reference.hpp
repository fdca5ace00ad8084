#pragma once
// The reference for row ops: one thread per row, float64 arithmetic, obviously correct.
#include <cuda_runtime_api.h>

#include "gemmforge/rowop.hpp"

namespace gf::harness {
// ref: rows x cols floats of y. residual_sum (if spec.residual): rows x cols floats of x + residual.
void row_reference(const RowOpSpec& s, const RowOpArgs& a, float* ref, float* residual_sum, cudaStream_t stream);
}  // namespace gf::harness

#pragma once
// The epilogue as its own elementwise kernel: D = act(alpha * G + beta * C + bias), or the SwiGLU
// gate of that, from G = A B^T already in memory (in D's dtype). The unfused plan, and what eager
// frameworks do after a plain GEMM.
#include <cuda_runtime_api.h>

#include "gemmforge/problem.hpp"

namespace gf::unfused {

// g: batch x M x N in p.out's dtype. args: d, c and bias as in GemmArgs. Vectorized 16-byte
// accesses where the row length and the pointers allow, scalar otherwise.
void apply_epilogue(const GemmProblem& p, const void* g, const GemmArgs& args, cudaStream_t stream);

}  // namespace gf::unfused

#pragma once
// The GEMM reference, in fp32 on the GPU: a simple tiled SIMT kernel, obviously correct and
// itself tested against a float64 CPU result.
#include <cuda_runtime_api.h>

#include "gemmforge/problem.hpp"

namespace gf::harness {

// The pre-activation G = alpha * scales * (A B^T) + beta * C + bias, in fp32, batch x M x N.
void reference_gemm(const GemmProblem& p, const GemmArgs& args, float* g, cudaStream_t s);
// D = act(G), or the SwiGLU gate of G; batch x M x out_cols, fp32.
void reference_epilogue(const GemmProblem& p, const float* g, float* ref, cudaStream_t s);
// For an fp8 D: chooses scale_d (one device float) so that the largest |ref| lands at half the
// format's range, and scales ref by it: then ref is what saturate(scale_d * result) should give.
void reference_fp8_output(const GemmProblem& p, float* ref, float* scale_d, cudaStream_t s);

}  // namespace gf::harness

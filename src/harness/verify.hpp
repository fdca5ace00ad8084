#pragma once
// Device-side helpers of the harness, compiled ahead of time by nvcc: random fill, poisoning,
// the fp32 reference GEMM and the comparison of an output with the reference.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>

#include "gemmforge/backend.hpp"

namespace gf::tune {

// Uniform values in [lo, hi), rounded to t; a different stream of values per seed.
void fill_uniform(void* ptr, DType t, int64_t count, uint64_t seed, float lo, float hi, cudaStream_t s);
// NaN in every element: an output the kernel fails to write fails verification.
void fill_nan(void* ptr, DType t, int64_t count, cudaStream_t s);

// The pre-activation G = alpha * scales * (A B^T) + beta * C + bias, in fp32, batch x M x N.
// A simple tiled SIMT kernel: obviously correct, tested against a float64 CPU result.
void reference_gemm(const GemmProblem& p, const GemmArgs& args, float* g, cudaStream_t s);
// D = act(G), or the SwiGLU gate of G; batch x M x out_cols, fp32.
void reference_epilogue(const GemmProblem& p, const float* g, float* ref, cudaStream_t s);

struct Comparison {
  double err_sq = 0, ref_sq = 0;
  double worst_excess = 0;  // max over elements of |out - ref| - kWorstSlack * tol * |ref|, at least 0
  int64_t count = 0;
  int64_t nonfinite = 0;  // elements of out that are NaN or inf
  double rel_err() const { return ref_sq > 0 ? std::sqrt(err_sq / ref_sq) : std::sqrt(err_sq); }
  double ref_rms() const { return count ? std::sqrt(ref_sq / double(count)) : 0.0; }
};
// Compares out (dtype t) with ref elementwise; synchronizes the stream.
Comparison compare(const void* out, DType t, const float* ref, int64_t count, cudaStream_t s);

// Per-element slack, in units of the dtype tolerance, for the worst element check.
inline constexpr int kWorstSlack = 8;
// Relative Frobenius tolerance for an output dtype.
double tolerance(DType out);
// "" when the comparison passes; else why not. NaN never passes.
std::string verdict(const Comparison& c, DType out);

}  // namespace gf::tune

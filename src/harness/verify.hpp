#pragma once
// The verdict on an output: relative Frobenius error against the fp32 (or float64) reference,
// with a bound on the worst element; NaN and inf never pass.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "gemmforge/dtype.hpp"

namespace gf::harness {

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

}  // namespace gf::harness

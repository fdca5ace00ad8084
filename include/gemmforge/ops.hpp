#pragma once
// Memory-bound ops around the GEMMs at run time: the row ops (softmax, RMSNorm, LayerNorm) with
// their tuned configs, and elementwise SwiGLU and GELU. fp32 math; bf16, f16 or f32 in and out.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gemmforge/rowop.hpp"

namespace gf {

// Runs row ops with the configuration the tuning DB holds for this device (gemmforge bench-ops
// tunes them), else a default one. Kernels are compiled (NVRTC, cached) on first use.
class OpsRuntime {
 public:
  explicit OpsRuntime(const std::string& db_path = "");
  ~OpsRuntime();
  void run(const RowOpSpec& spec, const RowOpArgs& args, cudaStream_t stream = nullptr);
  // Looks up and builds the ops' kernels ahead (for whole, 16-byte-aligned tensors), so that their
  // calls never compile: what a CUDA graph capture needs.
  void prepare(const std::vector<RowOpSpec>& specs);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

namespace ops {
// out = silu(gate) * up, elementwise over count elements; all three of dtype t.
void swiglu(const void* gate, const void* up, void* out, int64_t count, DType t, cudaStream_t stream = nullptr);
// out = gelu(x): erf form, or the tanh approximation.
void gelu(const void* x, void* out, int64_t count, DType t, bool tanh_approx, cudaStream_t stream = nullptr);
// The elements quantize_fp8 gives one scale, each written where the fp8 GEMM reads it (GemmArgs):
//   tensor: one float;
//   row: one per row (rows floats): activations' rows, or a weight's (B's columns), for rowcol;
//   group1x128: one per 1x128 group along a row, activations for block128: ceil(cols/128) x rows,
//     (g, r) at g*rows + r;
//   block128x128: one per 128x128 block, weights for block128: ceil(rows/128) x ceil(cols/128)
//     row-major;
//   tensor_static: one float, given and only read (a calibrated scale, or delayed scaling's from an
//     earlier step; positive and finite): the cast alone, one pass over x.
enum class QuantScaling { tensor, row, group1x128, block128x128, tensor_static };
// Parses "tensor", "row", "1x128", "128x128", "static". Throws gf::Error.
QuantScaling parse_quant_scaling(std::string_view s);

// x (rows x cols of dtype in, row-major) to fp8 (out: e4m3 or e5m2): q = saturate(x / scale) with
// scale = amax of the group / the fp8 type's largest value (1 where amax is 0), so q * scale is x
// again (tensor_static: the scale given). One pass over x for the grouped scalings (a group's
// second read hits the cache) and tensor_static; two for tensor.
void quantize_fp8(const void* x, void* q, float* scales, int64_t rows, int64_t cols, QuantScaling scaling, DType in,
                  DType out, cudaStream_t stream = nullptr);
// Delayed scaling's step: q = saturate(x / *scale) by a per-tensor scale given (an earlier step's;
// positive and finite), and x's amax (max |x|, NaN left out; 0 for an empty x) into *amax in the
// same pass, whence the next step's scale (amax / the fp8 type's largest value). One pass over x,
// where QuantScaling::tensor must read x twice: its scale is needed before the first element is cast.
void quantize_fp8_delayed(const void* x, void* q, const float* scale, float* amax, int64_t rows, int64_t cols, DType in,
                          DType out, cudaStream_t stream = nullptr);
}  // namespace ops

}  // namespace gf

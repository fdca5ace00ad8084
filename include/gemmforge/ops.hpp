#pragma once
// Memory-bound ops around the GEMMs: softmax, RMSNorm and LayerNorm over the last dimension of a
// rows x cols tensor, and elementwise SwiGLU and GELU. fp32 math; bf16, f16 or f32 in and out.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

#include "gemmforge/dtype.hpp"

namespace gf {

enum class RowOpKind : uint8_t { softmax, rmsnorm, layernorm };

struct RowOpSpec {
  RowOpKind kind = RowOpKind::softmax;
  int64_t rows = 0, cols = 0;
  DType in = DType::bf16, out = DType::bf16;
  bool residual = false;   // rmsnorm: x + residual first; the sum is written to residual_out
  bool valid_len = false;  // softmax: elements at or past valid_len[row] are masked to 0

  // "softmax:65536x4096:bf16", "rmsnorm+residual:4096x4096:bf16", "softmax+valid:8x128:f16->f32"
  std::string key() const;
  static RowOpSpec parse(std::string_view text);  // throws gf::Error with a one-line message
  std::string invalid_reason() const;             // "" when valid
  // Bytes the op must move: every input read once, every output written once.
  double bytes() const;
};

struct RowOpArgs {
  const void* x = nullptr;
  void* y = nullptr;
  const void* weight = nullptr;    // norms: cols elements of the input dtype
  const void* bias = nullptr;      // layernorm: cols elements of the input dtype
  const void* residual = nullptr;  // rmsnorm with residual
  void* residual_out = nullptr;    // rmsnorm with residual: x + residual (input dtype)
  const int* valid_len = nullptr;  // softmax with valid_len: rows ints
  float scale = 1.0f;              // softmax: applied to x first
  float eps = 1e-5f;               // norms
};

// Runs row ops with the configuration the tuning DB holds for this device (gemmforge bench-ops
// tunes them), else a default one. Kernels are compiled (NVRTC, cached) on first use.
class OpsRuntime {
 public:
  explicit OpsRuntime(const std::string& db_path = "");
  ~OpsRuntime();
  void run(const RowOpSpec& spec, const RowOpArgs& args, cudaStream_t stream = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

namespace ops {
// out = silu(gate) * up, elementwise over count elements; all three of dtype t.
void swiglu(const void* gate, const void* up, void* out, int64_t count, DType t, cudaStream_t stream = nullptr);
// out = gelu(x): erf form, or the tanh approximation.
void gelu(const void* x, void* out, int64_t count, DType t, bool tanh_approx, cudaStream_t stream = nullptr);
}  // namespace ops

}  // namespace gf

#pragma once
// The row-op problem model: softmax, RMSNorm and LayerNorm over the last dimension of a rows x
// cols tensor, with a stable text key and validation, and the pointers of one launch.
#include <cstdint>
#include <string>
#include <string_view>

#include "gemmforge/dtype.hpp"

namespace gf {

std::string_view to_string(RowOpKind k);

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

  // The tuner's view of the family: launch arguments, family name, rate (TB/s moved).
  using Args = RowOpArgs;
  static constexpr std::string_view kFamily = "rowop", kRateUnit = "TB/s";
  double rate(double us) const { return us > 0 ? bytes() / (us * 1e6) : 0.0; }
  bool operator==(const RowOpSpec& o) const {
    return kind == o.kind && rows == o.rows && cols == o.cols && in == o.in && out == o.out && residual == o.residual &&
           valid_len == o.valid_len;
  }
};

}  // namespace gf

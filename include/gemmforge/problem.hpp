#pragma once
// The problem model: one GEMM with its epilogue, a stable text key, and validation.
//
//   D = act(alpha * scale_a * scale_b * (A B^T) + beta * C + bias)     (TN, nn.Linear)
//   D = saturate(scale_d * the above), when D is fp8 (fp8 inputs only)
//   D = silu(gate) * up  of the above, when the epilogue is gated (D has N/2 columns)
//
// A is row-major M x K. B ("W") is row-major N x K for layout TN (y = x W^T, the nn.Linear case)
// or row-major K x N for layout NN. C and D are row-major M x N (M x N/2 when gated).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "gemmforge/dtype.hpp"

namespace gf {

// The kinds (gemmforge/codes.hpp): an activation; a bias per column (length N) or per row (M);
// the SwiGLU gate D[:, j] = silu(G[:, gate(j)]) * G[:, up(j)] over the pre-activation G, with
// gate(j) = 2j, up(j) = 2j+1 (interleaved) or gate(j) = j, up(j) = j + N/2 (split); FP8 scales.

struct Epilogue {
  float alpha = 1.0f;
  float beta = 0.0f;  // non-zero: a C input (residual) of D's shape is added
  BiasKind bias = BiasKind::none;
  Activation act = Activation::none;
  GateKind gate = GateKind::none;
  ScaleKind scale = ScaleKind::none;

  bool is_identity() const;
  bool has_c() const { return beta != 0.0f; }
  // A transcendental an element (erf or tanh GELU, SiLU, the SwiGLU gate's): ALU work after the
  // main loop, which a cooperative schedule leaves the tensor cores idle through.
  bool has_transcendental() const { return gate != GateKind::none || is_transcendental(act); }
  // "" for the identity, else tokens joined by '+': alpha=0.5+bias+residual+gelu_tanh ...
  std::string to_string() const;
  bool operator==(const Epilogue& o) const {
    return alpha == o.alpha && beta == o.beta && bias == o.bias && act == o.act && gate == o.gate && scale == o.scale;
  }
};

// Parses "bias+gelu_tanh", "residual", "swiglu", "alpha=0.5+beta=2", "none". Throws gf::Error.
Epilogue parse_epilogue(std::string_view text);
std::string_view to_string(Activation a);
std::string_view to_string(BiasKind b);
std::string_view to_string(GateKind g);
std::string_view to_string(ScaleKind s);

enum class Layout : uint8_t { tn, nn };
std::string_view to_string(Layout l);

// Device pointers for one launch. All matrices are dense and row-major as GemmProblem describes.
// bias (length N, or M for a per-row bias) and C (D's shape) have D's dtype, or bf16 when D is fp8
// (GemmProblem::epilogue_dtype).
// When a native kernel launched with programmatic dependent launch lets the stream's next kernel
// launch: once its last load is issued, at its start (right after its own dependency wait), or at
// exit.
enum class PdlTrigger { after_loads, at_start, at_exit };

struct GemmArgs {
  const void* a = nullptr;
  const void* b = nullptr;
  void* d = nullptr;
  const void* c = nullptr;
  const void* bias = nullptr;
  size_t bias_len = 0;  // elements of bias, where the caller knows it (0: unknown); checked
  // fp8 scales, fp32 (ScaleKind): tensor, one float each; rowcol, M floats for A's rows and N for
  // B's; block128, A per 1x128 group along K: ceil(K/128) x M, (kb, m) at kb*M + m (a k-block's
  // rows together, as the kernel reads them), and B per 128x128 block: ceil(N/128) x ceil(K/128)
  // row-major, (nb, kb) at nb*ceil(K/128) + kb (gf::ops::quantize_fp8 writes both layouts).
  const float* scale_a = nullptr;
  const float* scale_b = nullptr;
  size_t scale_a_len = 0, scale_b_len = 0;  // floats in each, where the caller knows them (0: unknown); checked
  // An fp8 D's scale, one float: D = saturate(scale_d * result), the convention of cuBLASLt and of
  // torch._scaled_mm's scale_result (the inverse of the inputs' dequantizing scales).
  const float* scale_d = nullptr;
  // Scratch for the kernel (Kernel::workspace_bytes): zero before its first launch on it, never
  // shared by launches that may run at once. gf::Runtime provides one per stream when null.
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  // Programmatic dependent launch: the kernel may start while the stream's previous kernel still
  // runs. Native kernels then prefetch their first weight tiles into L2 and wait for that kernel
  // before touching anything else; other backends launch as usual.
  bool pdl = false;
  // With pdl: whether native kernels prefetch their weights before the wait, and when they let
  // the stream's next kernel launch. At exit by default: in the decoder layer's chain at 16 tokens
  // (2026-12-03) the earlier triggers cost 12-15 us a chain of four GEMMs, at exit 0.3.
  bool pdl_prefetch = true;
  PdlTrigger pdl_trigger = PdlTrigger::at_exit;
};

// The alignment in bytes every non-null operand pointer has (a power of two, at most 256).
size_t pointer_alignment(const GemmArgs& args);

struct GemmProblem {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  DType a = DType::bf16;
  DType b = DType::bf16;  // A's dtype, except that fp8 inputs may mix e4m3 and e5m2
  DType out = DType::bf16;
  Layout layout = Layout::tn;
  Epilogue epilogue;

  // Columns of D: N, or N/2 when the epilogue is a gate.
  int64_t out_cols() const;
  // The dtype of C and the bias: D's, or bf16 when D is fp8.
  DType epilogue_dtype() const { return is_fp8(out) ? DType::bf16 : out; }
  double flops() const { return 2.0 * double(m) * double(n) * double(k) * double(batch); }
  // Bytes the GEMM must move at least: A, B, D (and C, bias, the scales) once each.
  double min_bytes() const;
  // fp32 elements of scale_a and scale_b the epilogue's scale kind reads (0 without scales).
  int64_t scale_a_count() const;
  int64_t scale_b_count() const;

  // Stable key, also the compact text form: "4096x6144x4096:bf16", "77x1000x1000:f16->f32:nn",
  // "4096x28672x4096:bf16:swiglu", "4096x4096x4096:e5m2xe4m3:scale=rowcol" (A e5m2, B e4m3).
  // Batch appears as a fourth size when it is not 1.
  std::string key() const;
  // "" when the problem is valid, else a one-line reason.
  std::string invalid_reason() const;
  // Throws gf::Error naming the problem when invalid.
  void validate() const;

  // Parses the text form: "MxNxK[xBATCH][:DTYPE[xDTYPE_B][->OUT]][:tn|nn][:EPILOGUE]". Fields after
  // the sizes may come in any order. Throws gf::Error with a one-line message on bad input.
  static GemmProblem parse(std::string_view spec);
  // The tuner's view of the family: launch arguments, family name, rate (TFLOP/s).
  using Args = GemmArgs;
  static constexpr std::string_view kFamily = "gemm", kRateUnit = "TFLOP/s";
  double rate(double us) const { return us > 0 ? flops() / (us * 1e6) : 0.0; }
  bool operator==(const GemmProblem& o) const {
    return m == o.m && n == o.n && k == o.k && batch == o.batch && a == o.a && b == o.b && out == o.out &&
           layout == o.layout && epilogue == o.epilogue;
  }
};

// Throws gf::Error naming the operand the problem needs that args lack, or one of the wrong size.
void check_gemm_args(const GemmProblem& problem, const GemmArgs& args);
// The epilogue's part of that (C, bias), for whatever applies it; messages start "WHO KEY: ".
void check_epilogue_args(const GemmProblem& problem, const GemmArgs& args, std::string_view who);

}  // namespace gf

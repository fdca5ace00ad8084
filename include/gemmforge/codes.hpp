#pragma once
// The codes that every part of gemmforge shares: element types, the epilogue's activation, bias,
// gate and scale kinds, and the row ops. One list each, in plain C++ with no includes, so that
// host code, the nvcc-built kernels and the NVRTC kernels (which get this file embedded) read the
// same definitions. An enumerator's name is its name everywhere: in problem keys, in generated
// kernel source, in the Triton templates' constexprs and in the DB.
//
// A new activation is one word in GF_ACTIVATIONS, its formula in kernels/epilogue/activation.cuh
// and its formula in python/gemmforge_triton/templates.py (_activate) and
// python/gemmforge_cute/activations.py (activate). cuBLASLt reports it
// unsupported until backends/gemm/cublaslt/matmul_plan.cpp maps it to one of its epilogues.

#define GF_DTYPES(X) X(f32) X(f16) X(bf16) X(e4m3) X(e5m2)
#define GF_ACTIVATIONS(X) X(none) X(relu) X(gelu) X(gelu_tanh) X(silu)
#define GF_BIAS_KINDS(X) X(none) X(col) X(row)            // col: one per column of D (length N); row: per row (M)
#define GF_GATE_KINDS(X) X(none) X(interleaved) X(split)  // SwiGLU over the pre-activation; see problem.hpp
#define GF_SCALE_KINDS(X) X(none) X(tensor) X(rowcol) X(block128)  // FP8 dequantisation scales; see problem.hpp
#define GF_ROWOP_KINDS(X) X(softmax) X(rmsnorm) X(layernorm)

#define GF_CODE_ENUMERATOR(name) name,
#define GF_CODE_NAME(name) #name,

namespace gf {

enum class DType : unsigned char { GF_DTYPES(GF_CODE_ENUMERATOR) };
enum class Activation : unsigned char { GF_ACTIVATIONS(GF_CODE_ENUMERATOR) };
enum class BiasKind : unsigned char { GF_BIAS_KINDS(GF_CODE_ENUMERATOR) };
enum class GateKind : unsigned char { GF_GATE_KINDS(GF_CODE_ENUMERATOR) };
enum class ScaleKind : unsigned char { GF_SCALE_KINDS(GF_CODE_ENUMERATOR) };
enum class RowOpKind : unsigned char { GF_ROWOP_KINDS(GF_CODE_ENUMERATOR) };

// An activation that takes a transcendental an element (erf or tanh GELU, SiLU): ALU work after
// the main loop, which a cooperative schedule leaves the tensor cores idle through.
constexpr bool is_transcendental(Activation a) {
  return a == Activation::gelu || a == Activation::gelu_tanh || a == Activation::silu;
}

// The names, indexed by the enumerators' values.
inline constexpr const char* kDTypeNames[] = {GF_DTYPES(GF_CODE_NAME)};
inline constexpr const char* kActivationNames[] = {GF_ACTIVATIONS(GF_CODE_NAME)};
inline constexpr const char* kBiasKindNames[] = {GF_BIAS_KINDS(GF_CODE_NAME)};
inline constexpr const char* kGateKindNames[] = {GF_GATE_KINDS(GF_CODE_NAME)};
inline constexpr const char* kScaleKindNames[] = {GF_SCALE_KINDS(GF_CODE_NAME)};
inline constexpr const char* kRowOpKindNames[] = {GF_ROWOP_KINDS(GF_CODE_NAME)};

}  // namespace gf

#undef GF_CODE_ENUMERATOR
#undef GF_CODE_NAME

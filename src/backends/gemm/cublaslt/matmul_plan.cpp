#include "backends/gemm/cublaslt/matmul_plan.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <mutex>
#include <optional>

#include "gemmforge/error.hpp"

namespace gf::cublaslt {
namespace {

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::f32:
      return CUDA_R_32F;
    case DType::f16:
      return CUDA_R_16F;
    case DType::bf16:
      return CUDA_R_16BF;
    case DType::e4m3:
      return CUDA_R_8F_E4M3;
    case DType::e5m2:
      return CUDA_R_8F_E5M2;
  }
  return CUDA_R_32F;
}

template <class T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
  GF_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)));
}

cublasLtMatrixLayout_t make_layout(DType t, int64_t rows, int64_t cols, int64_t ld, int64_t batch) {
  cublasLtMatrixLayout_t layout = nullptr;
  GF_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, cuda_type(t), uint64_t(rows), uint64_t(cols), ld));
  if (batch > 1) {
    int32_t count = int32_t(batch);
    int64_t stride = rows * cols;
    GF_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    GF_CUBLAS_CHECK(
        cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride));
  }
  return layout;
}

// cuBLASLt's fused epilogue for the activation and a column bias; none where it has no such
// epilogue (its GELU is the tanh form). An activation added to gemmforge lands in the default.
std::optional<cublasLtEpilogue_t> epilogue_of(const Epilogue& e) {
  const bool bias = e.bias == BiasKind::col;
  switch (e.act) {
    case Activation::none:
      return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    case Activation::relu:
      return bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    case Activation::gelu_tanh:
      return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    default:
      return std::nullopt;
  }
}

}  // namespace

cublasLtHandle_t handle() {
  static cublasLtHandle_t h = nullptr;
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    cublasStatus_t st = cublasLtCreate(&h);
    if (st != CUBLAS_STATUS_SUCCESS) failure = cublasLtGetStatusString(st);
  });
  GF_CHECK(failure.empty(), "cuBLASLt could not start: {}", failure);
  return h;
}

std::string unsupported_reason(const GemmProblem& p) {
  const Epilogue& e = p.epilogue;
  if (is_fp8(p.a)) {
    // Hopper's FP8 GEMMs take K-major operands only (the problem model's rule) and 16-byte rows,
    // and no e5m2 x e5m2 product.
    if (p.a == DType::e5m2 && p.b == DType::e5m2) return "cuBLASLt has no e5m2 x e5m2 GEMM";
    if (p.k % 16 != 0) return "fp8 needs K a multiple of 16 (16-byte rows)";
  }
  // Measured on an H200 (cuBLASLt 13, 2026-12-03): status 15 (not supported) for both.
  if (p.out == DType::e5m2) return "cuBLASLt has no e5m2 D (an e4m3 D only)";
  if (is_fp8(p.out) && e.scale != ScaleKind::tensor) return "cuBLASLt has an fp8 D with tensor scales only";
  if (e.gate != GateKind::none) return "cuBLASLt has no SwiGLU epilogue";
  if (e.bias == BiasKind::row) return "cuBLASLt's bias runs along N only (no per-row bias)";
  if (!epilogue_of(e)) return fmt::format("cuBLASLt has no {} epilogue", to_string(e.act));
  return "";
}

MatmulPlan::MatmulPlan(const GemmProblem& p, bool fast_accum) {
  std::string why = unsupported_reason(p);
  GF_CHECK(why.empty(), "cuBLASLt cannot run {}: {}", p.key(), why);
  alpha = p.epilogue.alpha;
  beta = p.epilogue.beta;
  has_bias = p.epilogue.bias == BiasKind::col;
  scale = p.epilogue.scale;
  fp8_out = is_fp8(p.out);
  GF_CUBLAS_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  if (is_fp8(p.a)) {
    set_desc(desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, int8_t(fast_accum));
    // Rowwise: one scale per row of D^T (W's, length N) and per column (X's, length M). Block
    // scales: W's per 128x128 block, X's per 128 elements of K.
    if (scale == ScaleKind::rowcol || scale == ScaleKind::block128) {
      const bool rowcol = scale == ScaleKind::rowcol;
      set_desc(
          desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE,
          int32_t(rowcol ? CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F : CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F));
      set_desc(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE,
               int32_t(rowcol ? CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F : CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F));
      // cuBLASLt 13.1 refuses vector scales without scale pointers, at the heuristic already
      // (CUBLAS_STATUS_INVALID_VALUE): a placeholder stands in until a launch sets the real ones.
      const void* placeholder = reinterpret_cast<const void*>(uintptr_t{256});
      for (auto attr : {CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER})
        set_desc(desc, attr, placeholder);
    }
  }
  // An fp8 D's scale pointer too, so that the heuristic offers algorithms that scale D.
  if (fp8_out) set_desc(desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, reinterpret_cast<const void*>(uintptr_t{256}));
  bool tn = p.layout == Layout::tn;
  cublasOperation_t op_a = tn ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = CUBLAS_OP_N;
  set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSA, op_a);
  set_desc(desc, CUBLASLT_MATMUL_DESC_TRANSB, op_b);
  set_desc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, *epilogue_of(p.epilogue));
  // C and the bias are bf16 when D is fp8 (GemmProblem::epilogue_dtype), as cuBLASLt wants them.
  if (has_bias) set_desc(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, cuda_type(p.epilogue_dtype()));
  // cuBLASLt's A is our B, W: K x N column-major (ld K) read transposed for TN; N x K (ld N) for
  // NN. Its B is our A.
  a = tn ? make_layout(p.b, p.k, p.n, p.k, p.batch) : make_layout(p.b, p.n, p.k, p.n, p.batch);
  b = make_layout(p.a, p.k, p.m, p.k, p.batch);
  c = make_layout(p.epilogue_dtype(), p.n, p.m, p.n, p.batch);
  d = make_layout(p.out, p.n, p.m, p.n, p.batch);
}

MatmulPlan::~MatmulPlan() {
  if (desc) cublasLtMatmulDescDestroy(desc);
  for (auto l : {a, b, c, d})
    if (l) cublasLtMatrixLayoutDestroy(l);
}

}  // namespace gf::cublaslt

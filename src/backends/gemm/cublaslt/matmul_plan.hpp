#pragma once
// The cuBLASLt view of a GemmProblem: descriptors for the row-major problem expressed in
// cuBLASLt's column-major terms. D^T (N x M, column-major) = op(W) op(X) with W as cuBLASLt's A
// and X as its B, so the nn.Linear case (TN) is opA = T, opB = N and a bias per column of D is
// cuBLASLt's bias per row of D^T.
#include <cublasLt.h>

#include <string>

#include "gemmforge/error.hpp"
#include "gemmforge/problem.hpp"

#define GF_CUBLAS_CHECK(expr)                                                             \
  do {                                                                                    \
    cublasStatus_t gf_st_ = (expr);                                                       \
    if (gf_st_ != CUBLAS_STATUS_SUCCESS)                                                  \
      GF_FAIL("{} failed: {} ({})", #expr, cublasLtGetStatusString(gf_st_), int(gf_st_)); \
  } while (0)

namespace gf::cublaslt {

// One handle per process, created on first use. Throws gf::Error when cuBLASLt cannot start.
cublasLtHandle_t handle();

// Why cuBLASLt cannot run this problem, or "".
std::string unsupported_reason(const GemmProblem& p);

class MatmulPlan {
 public:
  // fast_accum: fp8 only, Hopper's FP8 accumulation without periodic promotion (faster, less exact).
  explicit MatmulPlan(const GemmProblem& p, bool fast_accum = false);
  ~MatmulPlan();
  MatmulPlan(const MatmulPlan&) = delete;
  MatmulPlan& operator=(const MatmulPlan&) = delete;

  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr, d = nullptr;  // cuBLASLt's A, B, C, D
  float alpha = 1.0f, beta = 0.0f;
  bool has_bias = false;
  ScaleKind scale = ScaleKind::none;  // fp8: the scale pointers, like the bias, are set per launch
  bool fp8_out = false;               // D is fp8: its scale pointer too
  bool has_pointers() const { return has_bias || scale != ScaleKind::none || fp8_out; }
};

// The workspace every candidate may use: cuBLAS's own default on Hopper.
constexpr size_t kWorkspaceBytes = 32u << 20;

}  // namespace gf::cublaslt

#include "gemmforge/problem.hpp"

#include <gtest/gtest.h>

#include "gemmforge/error.hpp"
#include "gemmforge/runtime.hpp"

using namespace gf;

TEST(Problem, ParsesCompactSpec) {
  GemmProblem p = GemmProblem::parse("4096x6144x4096:bf16");
  EXPECT_EQ(p.m, 4096);
  EXPECT_EQ(p.n, 6144);
  EXPECT_EQ(p.k, 4096);
  EXPECT_EQ(p.batch, 1);
  EXPECT_EQ(p.a, DType::bf16);
  EXPECT_EQ(p.out, DType::bf16);
  EXPECT_EQ(p.layout, Layout::tn);
  EXPECT_TRUE(p.epilogue.is_identity());
  EXPECT_EQ(p.key(), "4096x6144x4096:bf16");
}

TEST(Problem, ParsesEpilogueLayoutAndOutput) {
  GemmProblem p = GemmProblem::parse("77x1000x1000x3:f16->f32:nn:bias+gelu_tanh");
  EXPECT_EQ(p.batch, 3);
  EXPECT_EQ(p.a, DType::f16);
  EXPECT_EQ(p.out, DType::f32);
  EXPECT_EQ(p.layout, Layout::nn);
  EXPECT_EQ(p.epilogue.bias, BiasKind::col);
  EXPECT_EQ(p.epilogue.act, Activation::gelu_tanh);
  EXPECT_EQ(p.key(), "77x1000x1000x3:f16->f32:nn:bias+gelu_tanh");
}

TEST(Problem, ScaleCountsFollowTheScaleKind) {
  EXPECT_EQ(GemmProblem::parse("300x200x1000:e4m3").scale_a_count(), 0);
  EXPECT_EQ(GemmProblem::parse("300x200x1000:e4m3:scale=tensor").scale_b_count(), 1);
  EXPECT_EQ(GemmProblem::parse("300x200x1000:e4m3:scale=rowcol").scale_a_count(), 300);
  EXPECT_EQ(GemmProblem::parse("300x200x1000:e4m3:scale=rowcol").scale_b_count(), 200);
  // 1x128 groups of A (8 along K of 1000) and 128x128 blocks of B (2 x 8).
  EXPECT_EQ(GemmProblem::parse("300x200x1000:e4m3:scale=block128").scale_a_count(), 8 * 300);
  EXPECT_EQ(GemmProblem::parse("300x200x1000:e4m3:scale=block128").scale_b_count(), 2 * 8);
}

TEST(Problem, KeyRoundTripsAndIsCanonical) {
  for (const char* spec :
       {"1x1x1:bf16", "16x6144x4096:bf16:residual", "4096x28672x4096:bf16:swiglu", "8x8x8:e4m3:scale=tensor",
        "4096x7168x16384:e4m3:scale=block128+bias+swiglu", "128x256x64:f16:alpha=0.5+bias+beta=0.25+relu",
        "64x64x64:bf16:swiglu_split", "10x20x30:bf16->f32:rowbias+silu", "4096x4096x4096:e5m2xe4m3:scale=rowcol",
        "64x64x64:e4m3xe5m2->f16"}) {
    GemmProblem p = GemmProblem::parse(spec);
    EXPECT_EQ(GemmProblem::parse(p.key()), p) << spec;
    EXPECT_EQ(GemmProblem::parse(p.key()).key(), p.key()) << spec;
  }
  // The bare scale words read as their scale= terms (the issue's `e4m3->bf16:block128`).
  EXPECT_EQ(GemmProblem::parse("4096x7168x16384:e4m3->bf16:block128").key(), "4096x7168x16384:e4m3:scale=block128");
  EXPECT_EQ(GemmProblem::parse("64x64x64:e4m3:rowwise+bias").key(), "64x64x64:e4m3:scale=rowcol+bias");
  EXPECT_EQ(GemmProblem::parse("64x64x64:e4m3:tensor").key(), "64x64x64:e4m3:scale=tensor");
  // Field order and dtype spelling do not change the key.
  EXPECT_EQ(GemmProblem::parse("32x32x32:bias+relu:bfloat16").key(), "32x32x32:bf16:bias+relu");
  EXPECT_EQ(GemmProblem::parse("32x32x32").key(), "32x32x32:bf16");
  EXPECT_EQ(GemmProblem::parse("32x32x32:bf16:tn").key(), "32x32x32:bf16");
  // Mixed fp8 inputs: B's dtype after an x, dropped from the key when it is A's.
  const GemmProblem mixed = GemmProblem::parse("64x64x64:e5m2xe4m3");
  EXPECT_EQ(mixed.a, DType::e5m2);
  EXPECT_EQ(mixed.b, DType::e4m3);
  EXPECT_EQ(mixed.out, DType::bf16);
  EXPECT_EQ(GemmProblem::parse("64x64x64:e4m3xe4m3").key(), "64x64x64:e4m3");
  EXPECT_FALSE(GemmProblem::parse("64x64x64:e4m3xe5m2") == GemmProblem::parse("64x64x64:e4m3"));
}

TEST(Problem, FlopsAndOutputColumns) {
  GemmProblem p = GemmProblem::parse("4096x28672x4096:bf16:swiglu");
  EXPECT_EQ(p.out_cols(), 14336);
  EXPECT_DOUBLE_EQ(p.flops(), 2.0 * 4096 * 28672 * 4096);
}

void expect_error(const char* spec, const char* fragment) {
  try {
    GemmProblem::parse(spec);
    FAIL() << spec << " parsed but should not";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(spec), std::string::npos) << "message should name the spec: " << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
  }
}

TEST(Problem, RejectsBadSpecsWithOneLineMessages) {
  expect_error("0x16x16:bf16", "sizes must be >= 1");
  expect_error("-4x16x16:bf16", "is not a size");
  expect_error("16x16:bf16", "expected MxNxK");
  expect_error("16x16xabc:bf16", "is not a size");
  expect_error("16x16x16:bf17", "'bf17' is neither a dtype");
  expect_error("16x16x16:bf16:gelu_fast", "unknown epilogue");
  expect_error("16x16x16:bf16:beta=2+residual", "gives the beta (residual) twice");
  expect_error("16x16x16:bf16:f16", "two dtype");
  expect_error("3000000000x16x16:bf16", "exceeds 2^31-1");
  expect_error("2000000000x2000000000x16:bf16", "overflows");
  expect_error("99999999999999999999x16x16:bf16", "is not a size");
  expect_error("16x15x16:bf16:swiglu", "even N");
  expect_error("16x16x16:bf16:swiglu+relu", "drop the activation");
  expect_error("16x16x16:bf16:relu+gelu", "gives the activation twice");
  expect_error("16x16x16:f32", "f32 inputs");
  expect_error("16x16x16:bf16xf16", "only fp8 inputs may mix");
  expect_error("16x16x16:e4m3xbf16", "only fp8 inputs may mix");
  expect_error("16x16x16:e4m3xe6m2", "unknown dtype of B");
  expect_error("16x16x16:bf16->e4m3", "fp8 outputs need fp8 inputs");
  expect_error("16x16x16:e4m3->e4m3:swiglu", "fp8 outputs with a SwiGLU gate");
  expect_error("16x16x16:bf16:scale=tensor", "only to fp8");
  expect_error("16x16x16x2:e4m3:scale=block128", "batch 1");
  expect_error("16x16x16:e4m3:scale=block", "unknown epilogue term");
  expect_error("16x16x16:bf16:alpha=x", "needs a decimal number");
  // Terms that contradict or repeat one another, numbers that are not plain decimals or vanish in
  // fp32, empty fields and malformed dtypes are refused rather than read some way.
  expect_error("16x16x16:bf16:bias+rowbias", "gives the bias twice");
  expect_error("16x16x16:bf16:swiglu+swiglu_split", "gives the gate twice");
  expect_error("16x16x16:bf16:alpha=2+alpha=3", "gives the alpha twice");
  expect_error("16x16x16:bf16:beta=1e-50", "needs a decimal number");
  expect_error("16x16x16:bf16:alpha= 1", "needs a decimal number");
  expect_error("16x16x16:bf16:alpha=0x1p3", "needs a decimal number");
  expect_error("16x16x16:bf16:alpha=inf", "needs a decimal number");
  expect_error("16x16x16:bf16:bias++relu", "empty term");
  expect_error("16x16x16:", "field 2 is empty");
  expect_error("16x16x16:bf16::relu", "field 3 is empty");
  expect_error("16x16x16:bf16>f32", "is neither a dtype");
  expect_error("16x16x16:int8", "'int8' is neither a dtype (f32, f16, bf16, e4m3, e5m2), a layout");
  expect_error("16x16x16:tf32->bf16", "is neither a dtype");
  expect_error("16x16x16:bf16->", "unknown output dtype");
  expect_error("+16x16x16:bf16", "is not a size");
}

TEST(Problem, ErrorsQuoteInputOnOneLineAndCutItShort) {
  for (std::string spec : {std::string("16x16x16:bf16:re\nlu"), std::string("16x16x16:\x1b[31mred"),
                           std::string("16x16x16:bf16:") + std::string(131072, 'a')}) {
    try {
      GemmProblem::parse(spec);
      ADD_FAILURE() << "accepted " << spec.substr(0, 40);
    } catch (const Error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
      EXPECT_EQ(what.find('\x1b'), std::string::npos) << what;
      EXPECT_LT(what.size(), 600u) << what.substr(0, 200);
    }
  }
}

TEST(Problem, ArgumentsAreCheckedAgainstTheEpilogue) {
  // Addresses only: nothing is dereferenced.
  auto ptr = [](uintptr_t v) { return reinterpret_cast<void*>(v << 8); };
  GemmArgs args;
  args.a = ptr(1);
  args.b = ptr(2);
  args.d = ptr(3);
  auto error_of = [&](const GemmProblem& p) -> std::string {  // "" where the arguments pass
    try {
      check_gemm_args(p, args);
      return "";
    } catch (const Error& e) {
      return e.what();
    }
  };
  EXPECT_NO_THROW(check_gemm_args(GemmProblem::parse("77x1000x64:bf16"), args));
  EXPECT_THROW(check_gemm_args(GemmProblem::parse("77x1000x64:bf16:residual"), args), Error) << "C is null";
  const GemmProblem col = GemmProblem::parse("77x1000x64:bf16:bias+gelu_tanh");
  EXPECT_THROW(check_gemm_args(col, args), Error) << "bias is null";
  args.bias = ptr(4);
  EXPECT_NO_THROW(check_gemm_args(col, args)) << "length unknown";
  args.bias_len = 1000;
  EXPECT_NO_THROW(check_gemm_args(col, args));
  args.bias_len = 77;
  EXPECT_NE(error_of(col).find("needs 1000"), std::string::npos) << "a bias of M elements for a per-column bias";
  EXPECT_NO_THROW(check_gemm_args(GemmProblem::parse("77x1000x64:bf16:rowbias"), args)) << "per row: M";
  // fp8 scales: their lengths, where given, are the scale kind's (rowwise: M for A, N for B).
  const GemmProblem rows = GemmProblem::parse("77x1000x64:e4m3:scale=rowcol");
  args.bias = nullptr;
  args.scale_a = args.scale_b = static_cast<const float*>(ptr(5));
  EXPECT_NO_THROW(check_gemm_args(rows, args)) << "lengths unknown";
  args.scale_a_len = 77, args.scale_b_len = 1000;
  EXPECT_NO_THROW(check_gemm_args(rows, args));
  args.scale_b_len = 1;
  EXPECT_NE(error_of(rows).find("scale_b has 1 floats; scale=rowcol needs 1000"), std::string::npos)
      << "one float of scale_b for rowwise scales: " << error_of(rows);
  args.b = nullptr;
  EXPECT_THROW(check_gemm_args(GemmProblem::parse("77x1000x64:bf16"), args), Error);
}

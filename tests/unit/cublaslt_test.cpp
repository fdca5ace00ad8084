// What cuBLASLt declines, without a GPU: the fp8 rules of Hopper's FP8 GEMMs among them (layout
// tn for fp8 is the problem model's own rule).
#include <gtest/gtest.h>

#include "backends/gemm/cublaslt/matmul_plan.hpp"

using namespace gf;

TEST(CublasLtRules, Fp8NeedsAlignedKAndNoE5m2Pair) {
  auto why = [](const char* spec) { return cublaslt::unsupported_reason(GemmProblem::parse(spec)); };
  EXPECT_EQ(why("4096x4096x4096:e4m3->bf16:scale=tensor"), "");
  EXPECT_EQ(why("128x4096x4096:e4m3->bf16:scale=rowcol+bias"), "");
  EXPECT_NE(why("64x64x64:e5m2->bf16"), "");
  EXPECT_EQ(why("64x64x64:e5m2xe4m3->bf16"), "");  // gradients (e5m2) by weights (e4m3)
  EXPECT_EQ(why("64x64x64:e4m3xe5m2->bf16"), "");
  EXPECT_EQ(why("64x64x64:e4m3->e4m3:scale=tensor+bias"), "");  // fp8 D with its scale, bf16 bias
  EXPECT_NE(why("64x64x72:e4m3->bf16"), "");
  EXPECT_EQ(why("64x64x72:bf16"), "");  // the rule is fp8's alone
}

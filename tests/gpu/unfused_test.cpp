// The unfused plan (plain GEMM + the epilogue kernel) against the reference: vectorized and scalar
// paths, every gate and bias kind.
#include <gtest/gtest.h>

#include <random>

#include "gemmforge/backend.hpp"
#include "harness/gemm_bench.hpp"

using namespace gf;

class UnfusedTest : public ::testing::TestWithParam<const char*> {};

TEST_P(UnfusedTest, EveryCandidateVerifies) {
  GemmProblem p = GemmProblem::parse(GetParam());
  DeviceInfo dev = DeviceInfo::query();
  auto unfused = find_backend<GemmProblem>("unfused");
  ASSERT_EQ(unfused->supports(p), "");
  auto cands = unfused->candidates(p, dev, {.level = Search::fast});
  ASSERT_FALSE(cands.empty());
  harness::GemmBench bench(p, dev, std::random_device{}());
  for (const auto& c : cands) {
    ASSERT_TRUE(unfused->compile(p, c, true).ok) << c.name;
    auto kernel = unfused->build(p, c);
    auto r = bench.measure(*kernel, false, {});
    EXPECT_TRUE(r.verified) << p.key() << " " << c.name << ": " << r.error;
  }
}

INSTANTIATE_TEST_SUITE_P(Epilogues, UnfusedTest,
                         ::testing::Values("256x512x128:bf16:bias+gelu_tanh", "130x512x256:bf16:swiglu",
                                           "130x512x256:f16:bias+swiglu_split",
                                           "100x384x256:bf16->f32:alpha=0.5+rowbias+residual+relu",
                                           "77x1000x1000:bf16:gelu", "33x130x64:bf16:bias+silu",
                                           "16x6144x4096:bf16:swiglu", "64x96x64x3:bf16:residual"));

// fp8: the scales stay in the plain GEMM, the rest runs after it.
INSTANTIATE_TEST_SUITE_P(Fp8, UnfusedTest,
                         ::testing::Values("256x512x1024:e4m3:scale=rowcol+bias+gelu",
                                           "130x512x4096:e4m3:scale=block128+swiglu",
                                           "77x1000x1008:e4m3->f16:scale=tensor+residual+silu"));

TEST(Unfused, DeclinesThePlainProblem) {
  auto unfused = find_backend<GemmProblem>("unfused");
  EXPECT_NE(unfused->supports(GemmProblem::parse("64x64x64:bf16")), "");
  EXPECT_NE(unfused->supports(GemmProblem::parse("64x64x64:e4m3:scale=rowcol")), "");  // the scales alone
  EXPECT_NE(unfused->supports(GemmProblem::parse("64x64x64:e4m3->e4m3:scale=tensor+bias")), "");
}

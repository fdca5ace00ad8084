// cuBLASLt candidates on awkward shapes, verified in process (no worker) against the reference.
#include <gtest/gtest.h>

#include <random>

#include "gemmforge/backend.hpp"
#include "gemmforge/error.hpp"
#include "harness/gemm_bench.hpp"

using namespace gf;

class CublasLtTest : public ::testing::TestWithParam<const char*> {};

TEST_P(CublasLtTest, EveryCandidateVerifies) {
  GemmProblem p = GemmProblem::parse(GetParam());
  DeviceInfo dev = DeviceInfo::query();
  auto lt = find_backend<GemmProblem>("cublaslt");
  ASSERT_EQ(lt->supports(p), "");
  auto cands = lt->candidates(p, dev, {.level = Search::fast});
  ASSERT_FALSE(cands.empty());
  harness::GemmBench bench(p, dev, std::random_device{}());
  for (const auto& c : cands) {
    auto kernel = lt->build(p, c);
    auto r = bench.measure(*kernel, /*time=*/false, {});
    EXPECT_TRUE(r.verified) << p.key() << " " << c.name << ": " << r.error;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CublasLtTest,
    ::testing::Values("1x1x8:bf16", "77x1000x1000:bf16", "1000x77x1000:f16", "4097x256x72:bf16", "128x6144x4096:bf16",
                      "64x96x40:bf16:nn", "256x512x128x4:bf16", "200x384x256:bf16->f32",
                      "128x256x64:bf16:bias+gelu_tanh", "128x256x64:f16:bias+relu", "96x128x64:bf16:alpha=2+residual",
                      // fp8, both accumulation modes (K kept small enough for fast accumulation)
                      "77x1000x1008:e4m3->bf16", "256x512x1024:e4m3->bf16:scale=tensor",
                      "130x384x512:e4m3->bf16:scale=rowcol", "64x256x256:e4m3->f16:scale=tensor+bias",
                      "96x128x64:e4m3->bf16:scale=rowcol+bias+relu", "130x384x512:e5m2xe4m3->bf16:scale=rowcol",
                      // an e4m3 D (the harness picks its scale_d), alone and with a bf16 bias; tensor scales only
                      "256x512x1024:e4m3->e4m3:scale=tensor", "130x384x512:e5m2xe4m3->e4m3:scale=tensor",
                      "256x512x1024:e4m3->e4m3:scale=tensor+bias"));

// Block scales (1x128 groups of X, 128x128 blocks of W, partial last ones): verified where this
// cuBLASLt has them, else refused in one line naming them (cuBLASLt 13.x on an H200, 2026-12-02).
TEST(CublasLt, BlockScalesVerifyOrAreRefusedInOneLine) {
  auto lt = find_backend<GemmProblem>("cublaslt");
  DeviceInfo dev = DeviceInfo::query();
  for (const char* spec : {"256x512x1024:e4m3->bf16:scale=block128", "77x1000x1008:e4m3->f16:scale=block128+bias"}) {
    GemmProblem p = GemmProblem::parse(spec);
    std::vector<Candidate> cands;
    try {
      cands = lt->candidates(p, dev, {.level = Search::fast});
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("no block-scaled fp8 GEMM"), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
      continue;
    }
    harness::GemmBench bench(p, dev, std::random_device{}());
    for (const auto& c : cands) {
      auto r = bench.measure(*lt->build(p, c), /*time=*/false, {});
      EXPECT_TRUE(r.verified) << p.key() << " " << c.name << ": " << r.error;
    }
  }
}

TEST(CublasLt, DeclinesWhatItCannotDo) {
  auto lt = find_backend<GemmProblem>("cublaslt");
  EXPECT_NE(lt->supports(GemmProblem::parse("64x64x64:bf16:swiglu")), "");
  EXPECT_NE(lt->supports(GemmProblem::parse("64x64x64:bf16:gelu")), "");
  EXPECT_NE(lt->supports(GemmProblem::parse("64x64x64:bf16:rowbias")), "");
}

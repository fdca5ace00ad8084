// The CUTLASS backend's kernels against the reference on fresh random data of awkward sizes (the
// harness poisons D first): every kernel of the catalogue on one shape, the fast list on the rest,
// every epilogue kind, NN, and CUTLASS's own refusal. Units missing from the kernel cache compile
// here (several minutes: precompile with scripts/gpu-check.sh's cutlass step, or raise
// GF_TEST_TIMEOUT).
#include <gtest/gtest.h>

#include <random>

#include "gemmforge/backend.hpp"
#include "gemmforge/error.hpp"
#include "harness/gemm_bench.hpp"

using namespace gf;

// Outside the anonymous namespace: the test classes gtest derives from CutlassTest are not in it.
struct CutlassCase {
  const char* spec;
  Search level;
};

namespace {

std::shared_ptr<Backend> cutlass_or_skip() {
  auto b = find_backend<GemmProblem>("cutlass");
  if (!b || !b->unavailable().empty()) return nullptr;
  return b;
}

}  // namespace

class CutlassTest : public ::testing::TestWithParam<CutlassCase> {};

TEST_P(CutlassTest, EveryCandidateVerifies) {
  auto cutlass = cutlass_or_skip();
  if (!cutlass) GTEST_SKIP() << "cutlass: " << find_backend<GemmProblem>("cutlass")->unavailable();
  const GemmProblem p = GemmProblem::parse(GetParam().spec);
  const DeviceInfo dev = DeviceInfo::query();
  ASSERT_EQ(cutlass->supports(p), "");
  const auto cands = cutlass->candidates(p, dev, {.level = GetParam().level});
  ASSERT_FALSE(cands.empty());
  harness::GemmBench bench(p, dev, std::random_device{}());
  for (const auto& c : cands) {
    const CompileReport r = cutlass->compile(p, c, /*use_cache=*/true);
    ASSERT_TRUE(r.ok) << c.name << ":\n" << r.log;
    auto kernel = cutlass->build(p, c);
    // Twice: the second launch runs on the Params the first one prepared (and, for stream-K,
    // on re-zeroed tile counters).
    for (int round = 0; round < 2; ++round) {
      auto m = bench.measure(*kernel, /*time=*/false, {});
      EXPECT_TRUE(m.verified) << p.key() << " " << c.name << " round " << round << ": " << m.error;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CutlassTest,
    ::testing::Values(CutlassCase{"77x1000x1008:bf16", Search::exhaustive},  // every kernel
                      CutlassCase{"4096x4096x4096:bf16", Search::fast}, CutlassCase{"16x4096x4096:bf16", Search::fast},
                      CutlassCase{"256x512x128x3:bf16", Search::fast},  // batched
                      CutlassCase{"130x384x512:bf16:bias+gelu", Search::fast},
                      CutlassCase{"200x256x72:f16:nn", Search::fast},
                      CutlassCase{"96x128x64:bf16:alpha=2+residual+silu", Search::fast},
                      CutlassCase{"136x264x128:bf16->f32:bias+gelu_tanh", Search::fast},
                      CutlassCase{"64x128x256:f16:bias+relu", Search::fast},
                      CutlassCase{"130x384x512:bf16:rowbias+relu", Search::fast},
                      // fp8, per-tensor scales (read from device memory)
                      CutlassCase{"4096x4096x4096:e4m3->bf16:scale=tensor", Search::fast},
                      CutlassCase{"77x1000x1024:e4m3->bf16:scale=tensor+bias+gelu", Search::fast},
                      CutlassCase{"77x1000x1024:e4m3->bf16:scale=tensor+rowbias", Search::fast},
                      // fp8, rowwise scales (the epilogue visitor tree)
                      CutlassCase{"4096x4096x4096:e4m3->bf16:scale=rowcol", Search::fast},
                      CutlassCase{"200x520x256:e4m3->bf16:scale=rowcol+bias+gelu", Search::fast},
                      CutlassCase{"200x520x256:e4m3->bf16:scale=rowcol+rowbias+gelu", Search::fast},
                      // fp8, 1x128 and 128x128 block scales (CUTLASS's blockwise mainloop)
                      CutlassCase{"4096x4096x4096:e4m3->bf16:scale=block128", Search::fast},
                      CutlassCase{"76x1024x1152:e4m3->bf16:scale=block128+bias", Search::fast},
                      CutlassCase{"76x1024x1152:e4m3->bf16:scale=block128+rowbias", Search::fast}));

TEST(Cutlass, CanImplementRefusalIsTheCandidatesError) {
  auto cutlass = cutlass_or_skip();
  if (!cutlass) GTEST_SKIP() << "cutlass: " << find_backend<GemmProblem>("cutlass")->unavailable();
  const GemmProblem listed = GemmProblem::parse("77x1000x1008:bf16");
  const auto cands = cutlass->candidates(listed, DeviceInfo::query(), {.level = Search::fast});
  ASSERT_FALSE(cands.empty());
  // N = 1004: D's rows are 8-byte aligned, which supports() declines and CUTLASS refuses.
  const GemmProblem odd = GemmProblem::parse("77x1004x1008:bf16");
  EXPECT_NE(cutlass->supports(odd), "");
  try {
    cutlass->build(odd, cands.front());
    FAIL() << "built a kernel CUTLASS cannot run";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("can_implement"), std::string::npos) << e.what();
  }
}

// CuTe DSL kernels (compiled on a machine with the DSL, carried in the kernel cache) launched by
// gemmforge, verified against the reference on awkward shapes. A candidate missing from the cache
// on a machine that cannot compile is a skip that says so, never a pass.
#include <gtest/gtest.h>

#include <random>

#include "gemmforge/backend.hpp"
#include "harness/gemm_bench.hpp"
#include "jit/cute_dsl.hpp"

using namespace gf;

class CuteGpuTest : public ::testing::TestWithParam<const char*> {};

// The default list (8 configs, and 2 swap-AB ones at M <= 64) holds both schedules, plain and
// persistent, for every shape here.
TEST_P(CuteGpuTest, EveryDefaultCandidateVerifies) {
  auto cute = find_backend<GemmProblem>("cute");
  GemmProblem p = GemmProblem::parse(GetParam());
  DeviceInfo dev = DeviceInfo::query();
  ASSERT_EQ(cute->supports(p), "");
  auto cands = cute->candidates(p, dev, {.level = Search::normal});
  harness::GemmBench bench(p, dev, std::random_device{}());
  int verified = 0;
  for (const auto& c : cands) {
    auto report = cute->compile(p, c, true);
    if (!report.ok && !jit::cute_dsl::compile_unavailable().empty()) {
      ADD_FAILURE() << c.name << " is not in the carried kernel cache: " << report.log;
      continue;
    }
    ASSERT_TRUE(report.ok) << c.name << "\n" << report.log;
    auto kernel = cute->build(p, c);
    auto r = bench.measure(*kernel, false, {});
    EXPECT_TRUE(r.verified) << p.key() << " " << c.name << ": " << r.error;
    verified += r.verified;
  }
  EXPECT_EQ(verified, int(cands.size()));
}

// The shapes the precompiled set (scripts/precompile-cute.sh) covers; M, N, K of 1, 77, 1000, 4097
// reach every edge of a tile.
INSTANTIATE_TEST_SUITE_P(
    Shapes, CuteGpuTest,
    ::testing::Values(
        "1x8x8:bf16", "77x1000x1008:bf16", "4097x1000x4104:bf16", "4096x4096x4096:bf16", "300x640x512:bf16:nn",
        "1000x80x1000:f16", "200x256x128:bf16:bias+gelu_tanh", "130x384x512:bf16:rowbias+relu",
        "100x384x256:bf16:alpha=0.5+bias+residual+gelu", "16x4096x4096:bf16:silu",
        "4096x4096x4096:e4m3->bf16:scale=rowcol", "77x1000x1008:e4m3->bf16:scale=tensor",
        "1000x80x1024:e4m3xe5m2->f16:scale=rowcol+bias+gelu", "4097x1000x4112:e4m3->bf16:scale=rowcol+residual",
        // SwiGLU: N / 2 not a multiple of the output tile.
        "77x1040x1008:bf16:swiglu", "130x400x512:bf16:bias+swiglu_split", "1000x96x1024:e4m3->bf16:scale=rowcol+swiglu",
        // Swap-AB (in the default list at M <= 64): row and column
        // bias and scales exchanged, odd M.
        "5x4104x4096:bf16:rowbias+relu", "33x1000x1008:e4m3->bf16:scale=rowcol+bias",
        "64x1000x1000:f16:alpha=0.5+bias+residual",
        // C with split-K (swap-AB and not): every slice loads C's
        // first pieces, the last one adds them.
        "16x1000x4104:bf16:alpha=0.5+residual",
        // 256-row tiles (default list) past M's and N's tiles: C and a bias.
        "4100x4000x2048:bf16:residual", "4100x6000x1024:bf16:bias+gelu_tanh",
        // 256-row tiles with a gate (N / 2 not a multiple of 96) and erf GELU.
        "4100x6000x1024:bf16:swiglu", "4100x4000x2048:bf16:bias+gelu",
        "4100x6000x1024:e4m3->bf16:scale=rowcol+swiglu",
        // Block scales: an odd and an even count of k-blocks (the
        // two sets of products), a last k-block and a last column
        // block in part, K past 4096 (promotion needed), split-K
        // at M = 16, one k-block at M = 1.
        "77x1000x1008:e4m3->bf16:scale=block128", "4097x1000x4112:e4m3->bf16:scale=block128+bias+gelu",
        "1000x384x4096:e4m3xe5m2->f16:scale=block128+residual", "16x4096x4096:e4m3->bf16:scale=block128",
        "1x136x128:e4m3->bf16:scale=block128+rowbias+silu",
        // SwiGLU split along K (the default list's split-K kernels).
        "33x2064x4096:e4m3->bf16:scale=rowcol+swiglu_split",
        // Block scales with SwiGLU: interleaved rows; split halves
        // whose up rows start mid-block (N/2 = 8.5 blocks), a bias;
        // split-K at M = 16.
        "130x512x4096:e4m3->bf16:scale=block128+swiglu", "77x2176x1024:e4m3->bf16:scale=block128+bias+swiglu_split",
        "16x4096x4096:e4m3->bf16:scale=block128+swiglu"));

// Kernels held at once run their own code, as a tuner's race holds its candidates: each is
// verified after all are loaded. (They were not: a later kernel's shared object could come back
// as an earlier one's, and a race timed one kernel under every name.)
TEST(CuteGpu, KernelsLoadedTogetherEachRunTheirOwn) {
  auto cute = find_backend<GemmProblem>("cute");
  DeviceInfo dev = DeviceInfo::query();
  struct Held {
    GemmProblem p;
    std::unique_ptr<Kernel> kernel;
  };
  std::vector<Held> held;
  // Two epilogues, so that one kernel running the other's code writes the wrong D.
  for (const char* spec : {"200x256x128:bf16:bias+gelu_tanh", "130x384x512:bf16:rowbias+relu"}) {
    GemmProblem p = GemmProblem::parse(spec);
    for (const auto& c : cute->candidates(p, dev, {.level = Search::normal, .top_k = 2})) {
      auto report = cute->compile(p, c, true);
      ASSERT_TRUE(report.ok) << spec << " " << c.name << " (is it in the carried kernel cache?)\n" << report.log;
      held.push_back({p, cute->build(p, c)});
    }
  }
  for (auto& h : held) {
    harness::GemmBench bench(h.p, dev, std::random_device{}());
    auto r = bench.measure(*h.kernel, false, {});
    EXPECT_TRUE(r.verified) << h.p.key() << ": " << r.error;
  }
}

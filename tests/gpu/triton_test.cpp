// Triton templates launched by gemmforge's own launcher, verified against the reference.
#include <gtest/gtest.h>

#include <random>

#include "gemmforge/backend.hpp"
#include "tune/problem_bench.hpp"

using namespace gf;

class TritonGpuTest : public ::testing::TestWithParam<const char*> {};

TEST_P(TritonGpuTest, EveryFastCandidateVerifies) {
  auto triton = find_backend("triton");
  if (!triton->unavailable().empty()) GTEST_SKIP() << "Triton backend unavailable: " << triton->unavailable();
  GemmProblem p = GemmProblem::parse(GetParam());
  DeviceInfo dev = DeviceInfo::query();
  ASSERT_EQ(triton->supports(p), "");
  auto cands = triton->candidates(p, dev, {.level = Search::fast});
  tune::ProblemBench bench(p, dev, std::random_device{}());
  for (const auto& c : cands) {
    auto report = triton->compile(p, c, true);
    ASSERT_TRUE(report.ok) << c.name << "\n" << report.log;
    auto kernel = triton->build(p, c);
    auto r = bench.measure(*kernel, false, {});
    EXPECT_TRUE(r.verified) << p.key() << " " << c.name << ": " << r.error;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, TritonGpuTest,
                         ::testing::Values("1x1x8:bf16", "77x1000x1000:bf16", "1000x77x1000:f16->f32", "4096x4096x4096:bf16",
                                           "300x640x512:bf16:nn", "200x256x128:bf16:bias+gelu_tanh",
                                           "130x512x256:bf16:swiglu", "130x512x256:bf16:bias+swiglu_split",
                                           "100x384x256:bf16->f32:alpha=0.5+rowbias+residual+relu", "16x6144x4096:bf16"));

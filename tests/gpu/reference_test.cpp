// The fp32 reference GEMM every candidate is verified against, checked against float64 on the CPU.
#include <gtest/gtest.h>

#include "gpu_test_util.hpp"
#include "harness/gemm_bench.hpp"

using namespace gf;

class ReferenceTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ReferenceTest, MatchesFloat64Cpu) {
  GemmProblem p = GemmProblem::parse(GetParam());
  DeviceInfo dev = DeviceInfo::query();
  harness::GemmBench bench(p, dev, std::random_device{}());
  GemmArgs args = bench.args(0);
  auto a = test::to_host(args.a, p.a, p.batch * p.m * p.k);
  auto b = test::to_host(args.b, p.a, p.batch * p.n * p.k);
  std::vector<double> c, bias;
  if (p.epilogue.has_c()) c = test::to_host(args.c, p.out, p.batch * p.m * p.n);
  if (p.epilogue.bias != BiasKind::none)
    bias = test::to_host(args.bias, p.out, p.epilogue.bias == BiasKind::row ? p.m : p.n);
  auto expect = test::cpu_gemm(p, a, b, c, bias);
  auto got = test::to_host(bench.reference(), DType::f32, int64_t(expect.size()));
  EXPECT_LT(test::rel_err(got, expect), 1e-5) << p.key();
}

INSTANTIATE_TEST_SUITE_P(Shapes, ReferenceTest,
                         ::testing::Values("1x1x1:bf16", "77x100x33:bf16", "65x130x257:f16:nn", "3x5x7x3:bf16",
                                           "70x96x40:bf16->f32:alpha=0.5+bias+residual", "33x64x50:bf16:rowbias+gelu",
                                           "40x80x30:bf16:bias+gelu_tanh", "20x64x16:f16:relu", "31x60x17:bf16:silu",
                                           "30x64x20:bf16:swiglu", "30x64x20:bf16:bias+swiglu_split"));

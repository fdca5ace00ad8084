// The native templates against the reference on fresh random data of awkward sizes, over a set of
// configs that covers every code path (1 and 2 consumers, cooperative and ping-pong, 64/128-row
// warpgroups, up to 192 accumulators a thread, split-K, 2-CTA clusters and 2x2 quads, both with split-K, the TMA-store
// epilogue (tiles of whole and partial boxes), both raster orders, N-major B, batch, every epilogue), and fp8 with each
// scale kind, promoted (ahead too) and not.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <thread>

#include "backends/gemm/native/compile.hpp"
#include "backends/gemm/native/kernel.hpp"
#include "backends/gemm/native/space.hpp"
#include "gpu_test_util.hpp"
#include "harness/fill.hpp"
#include "harness/gemm_bench.hpp"

using namespace gf;
using native::NativeConfig;

namespace {

std::vector<NativeConfig> covering_configs() {
  // The TMA-store epilogue (the last field: staging boxes): cooperative staging half the tile at a
  // time, ping-pong in a pair sharing B one box at a time, the whole tile with split-K, and the
  // whole tile alone and in a pair sharing A (with C, all of it prefetched in the main loop).
  NativeConfig tma_co{128, 256, 4, 2, false, 1, 1, false, 8, false, 2};
  NativeConfig tma_pp{128, 128, 5, 2, true, 1, 2, true, 8, false, 1};
  NativeConfig tma_split{64, 128, 6, 1, false, 3, 1, false, 8, true, 2};
  NativeConfig tma_whole{128, 256, 3, 2, false, 1, 1, false, 8, false, 4};
  NativeConfig tma_whole_pair{256, 128, 3, 2, false, 1, 2, false, 8, false, 2};
  // Widths that are not whole 64-column boxes: the last box shifted to end at the tile's edge.
  NativeConfig tma_176_pair_m{128, 176, 5, 2, false, 1, 2, true, 8, false, 1};
  NativeConfig tma_112_whole_pair_n{256, 112, 4, 2, false, 1, 2, false, 8, false, 2};
  // Past 128 accumulators a thread (consumers of 128 x 160-192): partial boxes, stores from
  // registers in a pair, ping-pong.
  NativeConfig tma_160{256, 160, 3, 2, false, 1, 1, false, 8, true, 1};
  NativeConfig wide_192_pair_n{256, 192, 4, 2, false, 1, 2, false, 8, false};
  NativeConfig tma_pp_192_pair_m{128, 192, 4, 2, true, 1, 2, true, 8, false, 1};
  // Split-K in pairs: K-slices of tiles that share B (along M, TMA store) or A (along N).
  NativeConfig split_pp_pair_m{64, 128, 8, 2, true, 2, 2, true, 8, false, 2};
  NativeConfig split_pair_n{128, 96, 6, 2, false, 3, 2, false, 8, false};
  // 2x2 quads (A shared along N, B along M): cooperative with the TMA store, ping-pong from
  // registers grouped along N, and split-K.
  NativeConfig quad_tma{128, 256, 4, 2, false, 1, 4, false, 8, false, 2};
  NativeConfig quad_pp{128, 128, 6, 2, true, 1, 4, false, 8, true};
  NativeConfig quad_split{128, 128, 6, 2, false, 2, 4, false, 8, false, 1};
  return {
      quad_tma,
      quad_pp,
      quad_split,
      split_pp_pair_m,
      split_pair_n,
      tma_160,
      wide_192_pair_n,
      tma_pp_192_pair_m,
      tma_176_pair_m,
      tma_112_whole_pair_n,
      tma_co,
      tma_pp,
      tma_split,
      tma_whole,
      tma_whole_pair,
      {64, 64, 8, 1, false, 1, 1, false, 8, false},
      {64, 128, 6, 1, false, 2, 1, false, 8, false},
      {128, 128, 6, 2, false, 1, 1, false, 8, true},
      {128, 256, 4, 2, false, 1, 1, false, 8, false},
      {256, 128, 4, 2, false, 3, 1, false, 8, false},
      {128, 192, 4, 2, false, 1, 1, false, 4, true},
      {128, 96, 6, 2, false, 1, 1, false, 8, false},
      {256, 64, 5, 2, false, 2, 1, false, 16, true},
      {128, 256, 4, 2, false, 1, 2, false, 8, false},
      {128, 256, 4, 2, false, 1, 2, true, 8, false},
      {256, 128, 4, 2, false, 1, 2, true, 8, true},
      {64, 256, 5, 2, true, 1, 2, true, 8, false},
      {128, 128, 6, 2, true, 1, 2, false, 8, true},
      {256, 128, 4, 2, false, 1, 2, false, 4, false},
      {64, 256, 5, 2, true, 1, 1, false, 8, false},
      {128, 128, 6, 2, true, 2, 1, false, 8, true},
      {64, 128, 6, 2, true, 3, 1, false, 8, false},
  };
}

// Swap-AB (the transposed problem, D stored transposed): tried on every shape in layout tn
// without a gate, at any M (the tuner offers it at M <= 64): narrow and wide kernel N, split-K,
// pairs, ping-pong.
std::vector<NativeConfig> swap_configs() {
  return {
      {.bm = 64, .bn = 16, .stages = 8, .consumers = 1, .swap_ab = true},
      {.bm = 128, .bn = 16, .stages = 8, .consumers = 2, .split_k = 3, .swap_ab = true},
      {.bm = 64, .bn = 32, .stages = 8, .consumers = 2, .pingpong = true, .split_k = 2, .swap_ab = true},
      {.bm = 128, .bn = 64, .stages = 6, .consumers = 2, .cluster = 2, .swap_ab = true},
      {.bm = 128, .bn = 48, .stages = 6, .consumers = 2, .cluster = 2, .cluster_m = true, .swap_ab = true},
      {.bm = 64, .bn = 32, .stages = 8, .consumers = 1, .split_k = 3, .cluster = 2, .cluster_m = true, .swap_ab = true},
  };
}

void check_problem(const std::string& spec) {
  GemmProblem p = GemmProblem::parse(spec);
  DeviceInfo dev = DeviceInfo::query();
  ASSERT_EQ(native::unsupported_reason(p), "") << spec;
  std::vector<NativeConfig> configs;
  std::vector<NativeConfig> tried = covering_configs();
  for (const NativeConfig& c : swap_configs()) tried.push_back(c);
  for (NativeConfig c : tried)
    for (int promote : {0, 1, 2, 3}) {  // fp8: plain, promoted, promoted ahead or by halves (block scales: promoted)
      c.promote = promote > 0;
      c.promote_ahead = promote == 2;
      c.halves = promote == 3;
      if (native::illegal_reason(c, p, dev).empty()) configs.push_back(c);
    }
  ASSERT_FALSE(configs.empty()) << spec;
  std::vector<native::Compiled> compiled(configs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < configs.size(); ++i)
    threads.emplace_back([&, i] { compiled[i] = native::compile_candidate(configs[i], p, true); });
  for (auto& t : threads) t.join();
  harness::GemmBench bench(p, dev, std::random_device{}());
  for (size_t i = 0; i < configs.size(); ++i) {
    ASSERT_TRUE(compiled[i].report.ok) << configs[i].name(p) << "\n" << compiled[i].report.log;
    auto kernel = native::load_kernel(configs[i], p, compiled[i].cubin);
    auto r = bench.measure(*kernel, false, {});
    EXPECT_TRUE(r.verified) << spec << " " << configs[i].name(p) << ": " << r.error;
    // Twice: split-K counters must be back at zero for the next launch.
    r = bench.measure(*kernel, false, {});
    EXPECT_TRUE(r.verified) << spec << " " << configs[i].name(p) << " (second launch): " << r.error;
  }
}

}  // namespace

class NativeShapes : public ::testing::TestWithParam<const char*> {};
TEST_P(NativeShapes, MatchesReference) { check_problem(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Plain, NativeShapes,
                         ::testing::Values("1x1x8:bf16", "77x77x64:bf16", "1x4097x1000:f16", "1000x1000x1000:bf16",
                                           "4097x77x1000:bf16->f32", "77x1000x1000:f16->bf16", "4097x4097x64:bf16",
                                           "256x512x4096:bf16", "16x6144x4096:bf16", "123x256x136x3:bf16",
                                           "300x640x512:bf16:nn", "1000x1000x1000:f16:nn", "77x512x1000:bf16->f32:nn",
                                           // single-sequence decode: M = 1..8 on llama3-8b's o and down,
                                           // and on odd N and K; 128 tokens, the small-M model's edge
                                           "1x4096x4096:bf16", "2x4096x4096:bf16", "3x4096x4096:bf16",
                                           "4x1000x1000:f16", "5x1000x1000:bf16", "6x4097x1000:bf16",
                                           "7x1000x1040:bf16", "8x4096x14336:bf16", "128x4096x4096:bf16"));

INSTANTIATE_TEST_SUITE_P(
    Epilogues, NativeShapes,
    ::testing::Values("200x256x128:bf16:bias+gelu_tanh", "77x96x64:bf16:gelu", "64x128x64:f16:silu",
                      "100x384x256:bf16->f32:alpha=0.5+rowbias+residual+relu", "130x512x256:bf16:swiglu",
                      "130x512x256:bf16:bias+swiglu_split", "1000x1000x1000:bf16:residual",
                      "129x1000x512:bf16:bias+relu", "77x136x64:bf16:bias+residual+gelu",
                      "300x384x512:f16:alpha=0.5+beta=2", "16x6144x4096:bf16:bias+swiglu",
                      // Several tiles a CTA: each tile's D stored during the next's main loop.
                      "2000x4096x256:bf16:bias+gelu_tanh", "1500x3000x192:f16:alpha=0.5+rowbias+silu"));

// fp8 with each scale kind: K not a multiple of the 128-element k-block (a partial last block,
// and block scales over it), rows and columns past the tiles, every epilogue, e5m2, mixed inputs.
INSTANTIATE_TEST_SUITE_P(
    Fp8, NativeShapes,
    ::testing::Values("77x1000x1008:e4m3:scale=tensor", "1x4096x4096:e4m3:scale=rowcol", "5x1000x1040:e4m3",
                      "300x640x4096:e4m3:scale=block128", "16x6144x4096:e4m3:scale=block128",
                      "1000x1000x1040:e4m3->f32:scale=rowcol+bias", "130x512x256:e4m3:scale=block128+swiglu",
                      "130x512x256:e4m3:scale=rowcol+bias+swiglu_split", "4097x256x528:e5m2:scale=tensor",
                      "200x384x8192:e4m3:scale=tensor+bias+gelu_tanh", "129x1000x512:e4m3:scale=rowcol+residual",
                      "1000x1000x1040:e4m3->f16:scale=block128+rowbias+silu",
                      // alpha, which per-tensor and per-row/column scales take into their factors.
                      "2000x2048x1040:e4m3:scale=rowcol+alpha=0.5+gelu", "77x1000x1008:e4m3:scale=tensor+alpha=2+silu",
                      "130x512x256:e4m3:scale=rowcol+alpha=0.5+bias+swiglu_split",
                      // Mixed inputs: gradients (e5m2) by weights (e4m3), and the other way round.
                      "300x640x1040:e5m2xe4m3:scale=rowcol", "77x1000x4096:e4m3xe5m2:scale=block128+bias",
                      // fp8 D (the harness picks its scale_d), C and bias then bf16.
                      "300x640x1040:e4m3->e4m3:scale=rowcol+bias",
                      "129x1000x4096:e4m3->e5m2:scale=block128+residual+gelu", "16x4096x4096:e4m3->e4m3:scale=tensor",
                      // Several tiles a CTA, promoted: the consumers' turns carry across tiles.
                      "2000x2048x1024:e4m3:scale=block128", "2000x2048x1040:e4m3->bf16:scale=rowcol+bias",
                      // One k-block (promotion ahead's peeled block alone); 192-wide tiles from n0 % 128 = 64.
                      "200x448x128:e4m3:scale=block128",
                      // Promotion ahead's runs of four k-blocks after the first, then a pair: 7 k-blocks.
                      "300x640x896:e4m3:scale=block128"));

TEST(Native, DeclinesWhatTmaCannotAddress) {
  EXPECT_NE(native::unsupported_reason(GemmProblem::parse("64x64x77:bf16")), "");
  EXPECT_NE(native::unsupported_reason(GemmProblem::parse("64x77x64:bf16:nn")), "");
  EXPECT_NE(native::unsupported_reason(GemmProblem::parse("64x64x72:e4m3")), "");  // rows of 72 bytes
}

// Programmatic dependent launch: a chain of GEMMs, each reading the one before's output, gives
// the same values launched with the attribute as without it. A kernel that read its input before
// its dependency wait would read the previous GEMM's unfinished output: A, and with a residual C
// too (the register epilogue reads C ahead of its main loop), here the same x. (Not the same bits:
// a split-K reduction of 3 or more slices adds them in the order they finish.)
TEST(Native, PdlChainMatchesPlainLaunches) {
  for (const char* spec : {"16x4096x4096:bf16", "16x4096x4096:bf16:residual"}) {
    const GemmProblem p = GemmProblem::parse(spec);
    auto backend = find_backend<GemmProblem>("native");
    cuda::Stream stream;
    cuda::DeviceBuffer x[2] = {cuda::DeviceBuffer(size_t(p.m * p.k) * 2), cuda::DeviceBuffer(size_t(p.m * p.k) * 2)};
    cuda::DeviceBuffer w(size_t(p.n * p.k) * 2);
    // Weights of +-3/64: each GEMM keeps its output's spread near its input's (sqrt(K/3) * 3/64 / sqrt(3)).
    harness::fill_uniform(w.get(), DType::bf16, p.n * p.k, 11, -3.0f / 64, 3.0f / 64, stream.get());
    constexpr int kChain = 8;
    for (const auto& cand : backend->candidates(p, DeviceInfo::query(), {.level = Search::fast, .top_k = 4})) {
      auto kernel = backend->build(p, cand);
      cuda::DeviceBuffer workspace(std::max<size_t>(kernel->workspace_bytes(), 16));
      auto chain = [&](bool pdl) {
        harness::fill_uniform(x[0].get(), DType::bf16, p.m * p.k, 7, -1.0f, 1.0f, stream.get());
        GF_CUDA_CHECK(cudaMemsetAsync(workspace.get(), 0, workspace.bytes(), stream.get()));
        for (int i = 0; i < kChain; ++i) {
          GemmArgs args{.a = x[i % 2].get(), .b = w.get(), .d = x[(i + 1) % 2].get()};
          if (p.epilogue.has_c()) args.c = x[i % 2].get();  // x + x W^T
          args.workspace = workspace.get();
          args.workspace_bytes = workspace.bytes();
          args.pdl = pdl;
          kernel->launch(args, stream.get());
        }
        stream.sync();
        return test::to_host(x[kChain % 2].get(), DType::bf16, p.m * p.n);
      };
      const auto plain = chain(false), overlapped = chain(true);
      EXPECT_LT(test::rel_err(overlapped, plain), 1e-2) << spec << " " << cand.name;
      double rms = 0;
      for (double v : plain) rms += v * v;
      EXPECT_GT(rms / double(plain.size()), 0.01) << spec << " " << cand.name << ": the chain's values faded";
    }
  }
}

// Promotion is what keeps fp8 sums precise: Hopper's fp8 wgmma keeps a narrower accumulator than
// fp32 (about 13 mantissa bits, DeepSeek-V3 and SageAttention2 report), so a kernel that never
// promotes drifts with K. The same tile promoted and plain, with an f32 output (its rounding far
// below either): the promoted kernel's error stays at its k-blocks' and passes the check, the
// plain one's fails it from K = 4096 (0.0012 there against the 1e-3 tolerance, 0.003 at 16384).
// Block scales are promoted by construction (a scale every 128 K), so the plain kernel here is
// the rowwise one: the check a kernel without promotion must fail (issue 23).
TEST(Native, PromotionKeepsFp8SumsPreciseWhereThePlainKernelDrifts) {
  const DeviceInfo dev = DeviceInfo::query();
  for (int k : {4096, 16384}) {
    const GemmProblem p = GemmProblem::parse(fmt::format("256x512x{}:e4m3->f32:scale=rowcol", k));
    harness::GemmBench bench(p, dev, std::random_device{}());
    double err[2];
    for (int promote : {0, 1}) {
      NativeConfig c{.bm = 128, .bn = 128, .stages = 4, .consumers = 2};
      c.promote = promote;
      ASSERT_EQ(native::illegal_reason(c, p, dev), "") << c.name(p);
      const native::Compiled compiled = native::compile_candidate(c, p, true);
      ASSERT_TRUE(compiled.report.ok) << compiled.report.log;
      const auto r = bench.measure(*native::load_kernel(c, p, compiled.cubin), false, {});
      ASSERT_TRUE(r.rel_err >= 0 && std::isfinite(r.rel_err)) << c.name(p) << ": " << r.error;
      EXPECT_EQ(r.verified, bool(promote)) << c.name(p) << " at K = " << k << ": relative error " << r.rel_err;
      err[promote] = r.rel_err;
    }
    std::printf("fp8 K = %d, f32 output: relative error plain %.3g, promoted %.3g\n", k, err[0], err[1]);
    EXPECT_LT(err[1], err[0]) << "K = " << k;
    EXPECT_LT(err[1], 2.5e-4) << "K = " << k;  // k-blocks of 4 wgmma: ~7e-5 where the accumulator truncates
  }
}

// The CuTe DSL backend on the CPU: its search space, and compiling the template into shared
// objects through the Python worker (skipped, saying so, where nvidia-cutlass-dsl is missing).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "backends/gemm/cute/space.hpp"
#include "gemmforge/backend.hpp"
#include "jit/cute_dsl.hpp"
#include "stored_race.hpp"

using namespace gf;
using cute_backend::CuteConfig;

// The fast list judged by measured times on shapes its small-M ranking was not fitted on:
// looked up in the stored race of every bf16 CuTe DSL kernel (qwen2.5-7b and phi3-mini at 77
// tokens, H200, 2026-12-04 19:38 UTC), its best lands within 3% of the race's best in geomean
// (issue 26's bound for held-out shapes; 1.021 there, worst 1.086 at 77x3584x3584).
TEST(CuteSpace, FastListNearTheExhaustiveBestOnHeldOutShapes) {
  double log_sum = 0;
  int problems = 0;
  for (const test::StoredRace& race :
       test::load_races(std::string(GF_RUNS_DIR) + "/cute-race-exhaustive-77-128.json", "cute")) {
    if (race.problem.m != 77) continue;  // the 128-token races are llama3-8b's, which the ranking was fitted on
    std::vector<std::string> names;
    for (const CuteConfig& c : cute_backend::ranked_configs(race.problem, DeviceInfo::assumed_hopper(), Search::fast))
      names.push_back(c.name());
    const double ratio = test::list_over_best(race, names);
    ASSERT_LT(ratio, 1e30) << race.problem.key() << ": none of the fast list is in the race";
    EXPECT_LE(ratio, 1.10) << race.problem.key();
    log_sum += std::log(ratio);
    ++problems;
  }
  ASSERT_EQ(problems, 10);
  EXPECT_LE(std::exp(log_sum / problems), 1.03);
}

TEST(CuteSpace, LevelsAndNames) {
  DeviceInfo d = DeviceInfo::assumed_hopper();
  for (const char* spec :
       {"4096x4096x4096:bf16", "16x4096x14336:bf16", "77x1000x1008:f16:bias+gelu", "4096x4096x4096:bf16:gelu"}) {
    GemmProblem p = GemmProblem::parse(spec);
    // The fast list holds one more at small M, where kernels stand closer together, and where
    // an erf GELU's epilogue could run under a ping-pong kernel's multiplies (the model prices no
    // epilogue: the best ping-pong kernel joins the race).
    const auto fast = cute_backend::ranked_configs(p, d, Search::fast);
    EXPECT_EQ(fast.size(), p.m <= 128 || p.epilogue.has_transcendental() ? 4u : 3u) << spec;
    if (p.epilogue.has_transcendental())
      EXPECT_TRUE(std::any_of(fast.begin(), fast.end(), [](const CuteConfig& c) { return c.pingpong; })) << spec;
    EXPECT_EQ(cute_backend::ranked_configs(p, d, Search::normal).size(), 8u) << spec;
    auto all = cute_backend::ranked_configs(p, d, Search::exhaustive);
    // Two schedules of 8 tiles and 3 clusters, and ping-pong's 6 tiles of at most 128 x 128 and 3
    // clusters; past 256 rows the persistent 256x128 and 256x192 in 3 clusters; then split-K
    // variants of the plain 1x1 ones where tiles are few; swap-AB's (not counted) where M <= 128.
    const auto whole =
        std::count_if(all.begin(), all.end(), [](const CuteConfig& c) { return c.split_k == 1 && !c.swap_ab; });
    EXPECT_EQ(whole, p.m <= 256 ? 66 : 72) << spec;
    EXPECT_EQ(std::any_of(all.begin(), all.end(), [](const CuteConfig& c) { return c.swap_ab; }), p.m <= 128) << spec;
    for (const auto& c : all) {
      if (c.split_k > 1 || c.swap_ab) EXPECT_TRUE(!c.persistent && c.cluster_m * c.cluster_n == 1) << c.name();
      if (c.pingpong) EXPECT_TRUE(c.persistent && c.tile_m * c.tile_n <= 128 * 128) << c.name();
    }
    std::set<std::string> names;
    for (const auto& c : all) {
      EXPECT_TRUE(names.insert(c.name()).second) << c.name();
      EXPECT_EQ(CuteConfig::from_json(c.to_json()), c);
      EXPECT_EQ(cute_backend::illegal_reason(c, p), "") << c.name();
    }
  }
  // Both schedules reach the fast list of a large GEMM (its tiers are tile and schedule).
  bool persistent = false, plain = false;
  for (const auto& c :
       cute_backend::ranked_configs(GemmProblem::parse("4096x4096x4096:e4m3->bf16:scale=rowcol"), d, Search::fast))
    (c.persistent ? persistent : plain) = true;
  EXPECT_TRUE(persistent && plain);
  // Decode: few tiles (16x4096x14336 in 64x128 tiles is 32 CTAs on 132 SMs), so split-K is in the
  // fast list; at M = 4096 there is none. Its workspace holds whole tiles and a counter each.
  const GemmProblem down = GemmProblem::parse("16x4096x14336:bf16");
  const auto decode = cute_backend::ranked_configs(down, d, Search::fast);
  EXPECT_TRUE(std::any_of(decode.begin(), decode.end(), [](const CuteConfig& c) { return c.split_k > 1; }));
  for (const auto& c : cute_backend::ranked_configs(GemmProblem::parse("4096x4096x4096:bf16"), d, Search::exhaustive))
    EXPECT_EQ(c.split_k, 1) << c.name();
  // At 128 tokens the short list streams the weights once: 128-row tiles, 64-row ones in pairs
  // along M that share B's tile by multicast, or swap-AB with all the tokens in one tile.
  for (const char* spec : {"128x6144x4096:bf16", "128x4096x14336:bf16", "128x28672x4096:bf16"})
    for (const auto& c : cute_backend::ranked_configs(GemmProblem::parse(spec), d, Search::fast))
      EXPECT_GE(c.swap_ab ? c.tile_n : c.tile_m * c.cluster_m, 128) << spec << " " << c.name();
  const auto ws = cute_backend::split_workspace(CuteConfig{.tile_m = 64, .tile_n = 128, .split_k = 4}, down);
  EXPECT_EQ(ws.partials_bytes, 64u * 4096 * 4);
  EXPECT_EQ(ws.counters_bytes, 256u);
  EXPECT_EQ(cute_backend::split_workspace(CuteConfig{}, down).partials_bytes, 0u);
  // Swap-AB: the kernel computes D^T = B A^T, so its tiles and split-K workspace are the
  // transpose's, and a bias per column of D is one per row of D^T.
  const CuteConfig swap{.tile_m = 128, .tile_n = 16, .split_k = 4, .swap_ab = true};
  EXPECT_EQ(swap.name(), "wgmma_128x16_c1x1_k4_swap");
  EXPECT_EQ(CuteConfig::from_json(swap.to_json()), swap);
  EXPECT_FALSE(CuteConfig::from_json(CuteConfig{}.to_json()).swap_ab);
  EXPECT_EQ(cute_backend::split_workspace(swap, down).partials_bytes, 4096u * 16 * 4);
  const GemmProblem mixed = GemmProblem::parse("16x4096x4096:e4m3xe5m2->bf16:scale=rowcol+bias");
  const GemmProblem t = cute_backend::kernel_problem(swap, mixed);
  EXPECT_TRUE(t.m == 4096 && t.n == 16 && t.a == DType::e5m2 && t.b == DType::e4m3 && t.epilogue.bias == BiasKind::row);
  const auto req = cute_backend::compile_request(swap, mixed);
  EXPECT_EQ(req.at("bias"), "row");
  EXPECT_EQ(req.at("dtype"), "e5m2");
  EXPECT_TRUE(req.at("swap_ab").get<bool>());
  EXPECT_NE(cute_backend::illegal_reason(swap, GemmProblem::parse("16x4096x4096:bf16:nn")), "");
  EXPECT_NE(cute_backend::illegal_reason(CuteConfig{.tile_m = 64, .tile_n = 32}, down), "")
      << "narrow tiles are swap-AB's";
  // Clusters of four: 30 fit at once on 132 SMs; the persistent grid counts on every SM.
  EXPECT_NE(cute_backend::illegal_reason(CuteConfig{.cluster_m = 2, .cluster_n = 2, .persistent = true},
                                         GemmProblem::parse("8192x4096x4096:bf16")),
            "");
  // A large square GEMM ranks the two-warpgroup 128x256 tile first.
  auto big = cute_backend::ranked_configs(GemmProblem::parse("8192x8192x8192:bf16"), d, Search::fast);
  EXPECT_EQ(big.front().tile_m, 128);
  EXPECT_EQ(big.front().tile_n, 256);
}

TEST(CuteSpace, DeclinesWhatTheTemplateLacks) {
  for (const char* spec :
       {"77x1000x1008:bf16:nn:bias+relu+residual", "64x64x64:e4m3->bf16",
        "77x1000x1008:e4m3xe5m2->f16:scale=rowcol+bias+gelu", "64x64x64:e5m2->bf16:scale=tensor",
        "64x128x64:bf16:swiglu", "77x1024x1000:bf16:bias+swiglu_split", "16x4096x64:e4m3->bf16:scale=rowcol+swiglu",
        "64x64x64:e4m3->bf16:scale=block128", "77x1000x1008:e4m3->bf16:scale=block128+bias+gelu",
        "64x128x64:e4m3->bf16:scale=block128+swiglu"})
    EXPECT_EQ(cute_backend::unsupported_reason(GemmProblem::parse(spec)), "") << spec;
  for (const char* spec :
       {"64x64x64:bf16->f32", "64x64x64x2:bf16", "64x128x64:bf16:nn:swiglu", "64x120x64:bf16:swiglu_split",
        "64x64x77:bf16", "64x77x64:bf16", "64x64x64:e4m3->e4m3", "64x64x64:e4m3->f32", "64x64x72:e4m3->bf16"})
    EXPECT_NE(cute_backend::unsupported_reason(GemmProblem::parse(spec)), "") << spec;
  // Block scales with a split gate: each half of a tile in one of B's 128-row blocks. N/2 = 1032 puts
  // a half's up rows across two blocks at every tile width; 1088 (8.5 blocks) does not at 64 or 128.
  const DeviceInfo d = DeviceInfo::assumed_hopper();
  EXPECT_TRUE(cute_backend::ranked_configs(GemmProblem::parse("64x2064x1024:e4m3->bf16:scale=block128+swiglu_split"), d,
                                           Search::exhaustive)
                  .empty());
  EXPECT_FALSE(cute_backend::ranked_configs(GemmProblem::parse("64x2176x1024:e4m3->bf16:scale=block128+swiglu_split"),
                                            d, Search::exhaustive)
                   .empty());
  // Nothing of M, N or K is in the compile request: one binary serves every shape.
  CuteConfig c;
  EXPECT_EQ(cute_backend::compile_request(c, GemmProblem::parse("77x1000x1008:bf16:bias")),
            cute_backend::compile_request(c, GemmProblem::parse("4096x8x64:bf16:bias")));
  EXPECT_NE(cute_backend::compile_request(c, GemmProblem::parse("64x64x64:bf16:bias")),
            cute_backend::compile_request(c, GemmProblem::parse("64x64x64:bf16:bias+gelu")));
  EXPECT_NE(cute_backend::compile_request(c, GemmProblem::parse("64x64x64:e4m3->bf16:scale=tensor")),
            cute_backend::compile_request(c, GemmProblem::parse("64x64x64:e4m3->bf16:scale=rowcol")));
  EXPECT_NE(cute_backend::compile_request(c, GemmProblem::parse("64x128x64:bf16:swiglu")),
            cute_backend::compile_request(c, GemmProblem::parse("64x128x64:bf16:swiglu_split")));
  // SwiGLU splits K too where its tiles are few (its gate and up columns are one accumulator, summed
  // whole): 16x4096x4096 is 32 tiles of 64x128.
  const GemmProblem gated = GemmProblem::parse("16x4096x4096:bf16:swiglu");
  const auto gated_list = cute_backend::ranked_configs(gated, DeviceInfo::assumed_hopper(), Search::normal);
  const auto gated_split =
      std::find_if(gated_list.begin(), gated_list.end(), [](const CuteConfig& g) { return g.split_k > 1; });
  ASSERT_NE(gated_split, gated_list.end());
  EXPECT_EQ(cute_backend::split_workspace(*gated_split, gated).partials_bytes,
            size_t(gated_split->tile_m) * 4096 * 4);  // one tile row: 4096 of B's rows, gate and up
  // 256-row tiles: two warpgroups, 128 rows each, cooperative and persistent, at most 192 wide, with
  // a gate or erf GELU beside their accumulators, but rowwise scales beside a bias at 128 wide alone.
  const GemmProblem big = GemmProblem::parse("4096x4096x4096:bf16");
  const CuteConfig tall{.tile_m = 256, .tile_n = 192, .cluster_m = 2, .persistent = true};
  EXPECT_EQ(cute_backend::illegal_reason(tall, big), "");
  EXPECT_EQ(cute_backend::illegal_reason(tall, GemmProblem::parse("4096x4096x4096:bf16:bias+gelu_tanh")), "");
  EXPECT_EQ(cute_backend::illegal_reason(tall, GemmProblem::parse("4096x4096x4096:bf16:bias+gelu")), "");
  EXPECT_EQ(cute_backend::illegal_reason(tall, GemmProblem::parse("4096x4096x4096:bf16:swiglu")), "");
  const GemmProblem rowwise_bias = GemmProblem::parse("4096x4096x4096:e4m3->bf16:scale=rowcol+bias");
  EXPECT_NE(cute_backend::illegal_reason(tall, rowwise_bias), "");
  EXPECT_EQ(
      cute_backend::illegal_reason({.tile_m = 256, .tile_n = 128, .cluster_m = 2, .persistent = true}, rowwise_bias),
      "");
  EXPECT_NE(cute_backend::illegal_reason({.tile_m = 256, .tile_n = 256, .persistent = true}, big), "");
  EXPECT_NE(cute_backend::illegal_reason({.tile_m = 256, .tile_n = 64, .persistent = true}, big), "");
  EXPECT_NE(cute_backend::illegal_reason({.tile_m = 256, .tile_n = 128}, big), "");  // one CTA a tile
  EXPECT_NE(cute_backend::illegal_reason({.tile_m = 256, .tile_n = 128, .persistent = true, .pingpong = true}, big),
            "");
  // Block scales: each k-block's products in registers beside the accumulators, so a warpgroup
  // holds at most 64 x 128 of each (two share a 128-row tile), and a tile's columns lie in one of
  // B's 128-row scale blocks. The fast list holds such tiles, cooperative and ping-pong.
  const GemmProblem blocks = GemmProblem::parse("4096x4096x4096:e4m3->bf16:scale=block128");
  EXPECT_EQ(cute_backend::illegal_reason({.tile_m = 128, .tile_n = 128, .cluster_m = 2, .persistent = true}, blocks),
            "");
  EXPECT_EQ(cute_backend::illegal_reason({.tile_m = 64, .tile_n = 128, .persistent = true, .pingpong = true}, blocks),
            "");
  EXPECT_NE(cute_backend::illegal_reason({.tile_m = 128, .tile_n = 256, .persistent = true}, blocks), "");
  EXPECT_NE(cute_backend::illegal_reason({.tile_m = 128, .tile_n = 192, .persistent = true}, blocks), "");
  EXPECT_NE(cute_backend::illegal_reason({.tile_m = 256, .tile_n = 128, .persistent = true}, blocks), "");
  EXPECT_NE(cute_backend::illegal_reason({.tile_m = 128, .tile_n = 128, .persistent = true, .pingpong = true}, blocks),
            "");
  EXPECT_NE(cute_backend::illegal_reason({.tile_m = 128, .tile_n = 16, .swap_ab = true},
                                         GemmProblem::parse("16x4096x4096:e4m3->bf16:scale=block128")),
            "");
  for (const char* spec : {"4096x4096x4096:e4m3->bf16:scale=block128", "16x4096x4096:e4m3->bf16:scale=block128"}) {
    const auto fast =
        cute_backend::ranked_configs(GemmProblem::parse(spec), DeviceInfo::assumed_hopper(), Search::fast);
    EXPECT_EQ(fast.size(), GemmProblem::parse(spec).m <= 128 ? 4u : 3u) << spec;
  }
  EXPECT_NE(cute_backend::compile_request(c, GemmProblem::parse("64x64x64:e4m3->bf16:scale=rowcol")),
            cute_backend::compile_request(c, GemmProblem::parse("64x64x64:e4m3->bf16:scale=block128")));
  CuteConfig persistent = c;
  persistent.persistent = true;
  EXPECT_NE(cute_backend::compile_request(c, GemmProblem::parse("64x64x64:bf16")),
            cute_backend::compile_request(persistent, GemmProblem::parse("64x64x64:bf16")));
}

TEST(CuteCompile, TemplateCompilesToALoadableSharedObject) {
  if (!jit::cute_dsl::compile_unavailable().empty())
    GTEST_SKIP() << "cannot compile CuTe DSL kernels here: " << jit::cute_dsl::compile_unavailable();
  auto cute = find_backend<GemmProblem>("cute");
  ASSERT_TRUE(cute);
  DeviceInfo d = DeviceInfo::assumed_hopper();
  for (const char* spec : {"130x384x512:bf16:bias+gelu+residual", "4096x4096x4096:f16:nn",
                           "4096x4096x4096:e4m3->bf16:scale=rowcol", "16x4096x4096:bf16:bias+swiglu_split"}) {
    GemmProblem p = GemmProblem::parse(spec);
    auto cands = cute->candidates(p, d, {.level = Search::fast, .top_k = 1});
    ASSERT_EQ(cands.size(), 1u);
    auto fresh = cute->compile(p, cands[0], /*use_cache=*/false);
    EXPECT_TRUE(fresh.ok) << spec << ": " << fresh.log;
    EXPECT_FALSE(fresh.cached);
    // Another shape of the same dtypes and epilogue compiles nothing.
    GemmProblem other = p;
    other.m = 1000;
    auto again = cute->compile(other, cands[0], /*use_cache=*/true);
    EXPECT_TRUE(again.ok && again.cached) << again.log;
    EXPECT_EQ(again.registers, fresh.registers) << "the cache keeps ptxas's report";
  }
  // Split-K (decode): its workspace reduction compiles too, and swap-AB's M-major D^T.
  const CuteConfig split{.tile_m = 64, .tile_n = 128, .split_k = 4};
  auto sk = cute->compile(GemmProblem::parse("16x4096x14336:bf16"), {"cute", split.name(), split.to_json()}, false);
  EXPECT_TRUE(sk.ok) << sk.log;
  const CuteConfig swap{.tile_m = 128, .tile_n = 16, .split_k = 2, .swap_ab = true};
  auto sw = cute->compile(GemmProblem::parse("16x4096x4096:e4m3->bf16:scale=rowcol+bias"),
                          {"cute", swap.name(), swap.to_json()}, false);
  EXPECT_TRUE(sw.ok) << sw.log;
  EXPECT_EQ(sw.spill_bytes, 0);
}

// Every kernel of a default list (plain, split-K, swap-AB, persistent cooperative and ping-pong;
// 16-bit with and without C, and fp8 with rowwise and block scales) as ptxas sees it: registers
// reported, no spills, and no wgmma serialized (ptxas's C7514, which an accumulate flag turned on
// inside the mainloop once caused); and its shared memory within sm_90's limit (the template
// raises otherwise: a struct a kilobyte over it compiled here and failed every launch on the GPU).
TEST(CuteCompile, DefaultSpaceCompilesWithoutSpillsOrSerializedWgmma) {
  if (!jit::cute_dsl::compile_unavailable().empty())
    GTEST_SKIP() << "cannot compile CuTe DSL kernels here: " << jit::cute_dsl::compile_unavailable();
  auto cute = find_backend<GemmProblem>("cute");
  DeviceInfo d = DeviceInfo::assumed_hopper();
  for (const char* spec :
       {"4096x4096x4096:bf16", "4096x4096x4096:bf16:residual", "16x4096x4096:e4m3->bf16:scale=rowcol+bias+gelu",
        "4096x4096x4096:e4m3->bf16:scale=block128", "16x4096x4096:e4m3->bf16:scale=block128+bias+gelu",
        "4096x28672x4096:e4m3->bf16:scale=block128+swiglu_split",
        // rowwise scales read once a row and a column (scale_and_bias), the gate's halves each their own
        "4096x28672x4096:e4m3->bf16:scale=rowcol+swiglu"}) {
    GemmProblem p = GemmProblem::parse(spec);
    for (const auto& c : cute->candidates(p, d, {.level = Search::normal})) {
      auto r = cute->compile(p, c, /*use_cache=*/true);
      ASSERT_TRUE(r.ok) << spec << " " << c.name << ": " << r.log;
      EXPECT_GT(r.registers, 0) << spec << " " << c.name;
      EXPECT_EQ(r.spill_bytes, 0) << spec << " " << c.name;
      EXPECT_EQ(r.log.find("C7514"), std::string::npos) << spec << " " << c.name << ": " << r.log;
    }
  }
  // The tall tiles of the exhaustive lists, where two warpgroups hold 128 rows each: beside
  // rowwise scales and a bias, C or an activation they spilled at 256x192 (declined since).
  for (const char* spec :
       {"4096x4096x4096:e4m3->bf16:scale=rowcol+residual", "4096x4096x4096:e4m3->bf16:scale=rowcol+bias+gelu_tanh",
        "4096x4096x4096:bf16:bias+residual"}) {
    GemmProblem p = GemmProblem::parse(spec);
    for (const auto& c : cute->candidates(p, d, {.level = Search::exhaustive})) {
      if (CuteConfig::from_json(c.config).tile_m != 256) continue;
      auto r = cute->compile(p, c, /*use_cache=*/true);
      ASSERT_TRUE(r.ok) << spec << " " << c.name << ": " << r.log;
      EXPECT_EQ(r.spill_bytes, 0) << spec << " " << c.name;
    }
  }
}

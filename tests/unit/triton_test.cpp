// The Triton backend on the CPU: its search space, and compiling templates to sm_90 cubins
// through the Python worker (skipped, saying so, where python3 with triton is missing).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "backends/gemm/triton/space.hpp"
#include "gemmforge/backend.hpp"

using namespace gf;
using triton_backend::TritonConfig;

TEST(TritonSpace, DefaultCoversInductorListsAndNamesAreUnique) {
  DeviceInfo d = DeviceInfo::assumed_hopper();
  GemmProblem p = GemmProblem::parse("4096x4096x4096:bf16");
  auto normal = triton_backend::ranked_configs(p, d, Search::normal);
  // Inductor's 20 mm configs and 8 persistent TMA configs, less mm 128x128x128 with 4 stages,
  // whose 256 KiB of shared memory does not fit an H100/H200.
  EXPECT_EQ(normal.size(), 27u);
  auto fast = triton_backend::ranked_configs(p, d, Search::fast);
  EXPECT_EQ(fast.size(), 8u);
  std::set<std::string> templates;
  for (const auto& c : fast) templates.insert(c.tmpl);
  EXPECT_EQ(templates.size(), 2u) << "the fast list tries both templates";
  auto all = triton_backend::ranked_configs(p, d, Search::exhaustive);
  EXPECT_GT(all.size(), 500u);
  std::set<std::string> names;
  for (const auto& c : all) {
    EXPECT_TRUE(names.insert(c.name()).second) << c.name();
    EXPECT_EQ(TritonConfig::from_json(c.to_json()), c);
  }
}

// fp8 searches Inductor's scaled_mm lists (its 25 configs and 80 small-M ones, 13 persistent),
// not the 16-bit ones: decode's fast list holds tiles of 16 or 32 rows.
TEST(TritonSpace, Fp8SearchesInductorsScaledLists) {
  DeviceInfo d = DeviceInfo::assumed_hopper();
  const GemmProblem big = GemmProblem::parse("4096x4096x4096:e4m3:scale=rowcol");
  const auto normal = triton_backend::ranked_configs(big, d, Search::normal);
  EXPECT_EQ(normal.size(), 30u);
  const auto exhaustive = triton_backend::ranked_configs(big, d, Search::exhaustive);
  const TritonConfig scaled_only{"mm", 64, 16, 256, 5, 4, 8, 132};  // in scaled_mm_configs alone
  EXPECT_TRUE(std::find(exhaustive.begin(), exhaustive.end(), scaled_only) != exhaustive.end());
  const GemmProblem decode = GemmProblem::parse("16x4096x4096:e4m3:scale=rowcol");
  const auto fast = triton_backend::ranked_configs(decode, d, Search::fast);
  EXPECT_TRUE(std::any_of(fast.begin(), fast.end(), [](const TritonConfig& c) { return c.bm <= 32; }));
  for (const auto& c : triton_backend::ranked_configs(decode, d, Search::normal))
    EXPECT_EQ(triton_backend::illegal_reason(c, decode), "") << c.name();
}

TEST(TritonSpace, DeclinesWhatTheTemplatesLack) {
  EXPECT_NE(triton_backend::unsupported_reason(GemmProblem::parse("64x64x64x2:bf16")), "");
  EXPECT_EQ(triton_backend::unsupported_reason(GemmProblem::parse("64x64x64:e4m3->bf16:scale=rowcol")), "");
  EXPECT_EQ(triton_backend::unsupported_reason(GemmProblem::parse("64x64x64:e4m3xe5m2->bf16:scale=rowcol")), "");
  EXPECT_NE(triton_backend::unsupported_reason(GemmProblem::parse("64x64x72:e4m3->bf16")), "");
  EXPECT_NE(triton_backend::unsupported_reason(GemmProblem::parse("64x64x64:e4m3->bf16:swiglu")), "");
  TritonConfig tma{"mm_persistent_tma", 128, 128, 64, 3, 8, 8, 132};
  EXPECT_NE(triton_backend::illegal_reason(tma, GemmProblem::parse("64x64x77:bf16")), "");
  EXPECT_NE(triton_backend::illegal_reason(tma, GemmProblem::parse("64x64x64:bf16:swiglu_split")), "");
  EXPECT_EQ(triton_backend::illegal_reason(tma, GemmProblem::parse("64x64x64:bf16:swiglu")), "");
}

TEST(TritonCompile, TemplatesCompileToSm90Cubins) {
  auto triton = find_backend<GemmProblem>("triton");
  ASSERT_TRUE(triton);
  if (!triton->unavailable().empty()) GTEST_SKIP() << "Triton backend unavailable: " << triton->unavailable();
  DeviceInfo d = DeviceInfo::assumed_hopper();
  for (const char* spec :
       {"1000x1000x1000:bf16:bias+gelu_tanh", "77x512x64:f16->f32:nn:residual", "64x256x128:bf16:swiglu_split",
        "256x512x1024:e4m3->bf16:scale=tensor", "130x384x512:e4m3->bf16:scale=rowcol+bias+relu", "64x128x256:e5m2->f16",
        "256x512x1024:e4m3xe5m2->bf16:scale=rowcol", "64x128x256:e5m2xe4m3->f16"}) {
    GemmProblem p = GemmProblem::parse(spec);
    auto cands = triton->candidates(p, d, {.level = Search::fast});
    ASSERT_FALSE(cands.empty()) << spec;
    std::set<std::string> templates;
    for (size_t i = 0; i < cands.size(); i += 3) {  // a sample, both templates where legal
      auto report = triton->compile(p, cands[i], /*use_cache=*/false);
      EXPECT_TRUE(report.ok) << spec << " " << cands[i].name << "\n" << report.log;
      auto again = triton->compile(p, cands[i], /*use_cache=*/true);
      EXPECT_TRUE(again.cached) << cands[i].name;
      templates.insert(cands[i].config.at("template"));
    }
  }
}

// Every fp8 variant of the default space compiles without spills (issue 23), registers and local
// bytes read from the cubin.
TEST(TritonCompile, Fp8DefaultSpaceCompilesWithoutSpills) {
  auto triton = find_backend<GemmProblem>("triton");
  ASSERT_TRUE(triton);
  if (!triton->unavailable().empty()) GTEST_SKIP() << "Triton backend unavailable: " << triton->unavailable();
  DeviceInfo d = DeviceInfo::assumed_hopper();
  for (const char* spec : {"4096x4096x4096:e4m3:scale=rowcol+bias+gelu_tanh", "16x4096x4096:e4m3:scale=tensor"}) {
    GemmProblem p = GemmProblem::parse(spec);
    for (const Candidate& c : triton->candidates(p, d, {.level = Search::normal})) {
      auto report = triton->compile(p, c, /*use_cache=*/true);
      ASSERT_TRUE(report.ok) << spec << " " << c.name << "\n" << report.log;
      EXPECT_GT(report.registers, 0) << c.name << ": no resource usage from the cubin";
      EXPECT_EQ(report.spill_bytes, 0) << spec << " " << c.name;
    }
  }
}

// The Triton and CuTe DSL row-op backends on the CPU: their spaces (legal, unique, best first,
// declining what the templates lack), shape-independent compile requests, and a compile of each
// through its toolchain where this machine has it.
#include <gtest/gtest.h>

#include <set>

#include "backends/rowop/cute/space.hpp"
#include "backends/rowop/triton/space.hpp"
#include "gemmforge/backend.hpp"
#include "jit/cute_dsl.hpp"
#include "jit/triton.hpp"

using namespace gf;

namespace {
const char* const kShapes[] = {"softmax:262144x1024:bf16",
                               "softmax:65536x4096:bf16",
                               "rmsnorm:16384x16384:bf16",
                               "softmax+valid:4096x65536:bf16",
                               "rmsnorm+residual:1024x262144:bf16",
                               "softmax:77x1000:f16->f32",
                               "rmsnorm:3x8:f32",
                               "softmax:5x1:bf16"};
}

TEST(TritonRowSpace, EveryShapeHasDistinctConfigsBestFirst) {
  for (const char* text : kShapes) {
    RowOpSpec s = RowOpSpec::parse(text);
    auto all = triton_rowops::ranked_configs(s, Search::exhaustive);
    ASSERT_FALSE(all.empty()) << text;
    std::set<std::string> names;
    for (const auto& c : all) {
      EXPECT_TRUE(names.insert(c.name()).second) << c.name();
      EXPECT_EQ(triton_rowops::TritonRowConfig::from_json(c.to_json()), c);
      if (c.single) EXPECT_GE(c.block, s.cols) << c.name();
      if (!c.single) EXPECT_LT(c.block, s.cols) << c.name();
    }
    auto fast = triton_rowops::ranked_configs(s, Search::fast);
    ASSERT_LE(fast.size(), 6u);
    EXPECT_EQ(fast[0], all[0]);
  }
  // Rows that fit a block are held whole; the longest ones loop.
  EXPECT_TRUE(triton_rowops::ranked_configs(RowOpSpec::parse("softmax:4096x4096:bf16"), Search::fast)[0].single);
  EXPECT_FALSE(triton_rowops::ranked_configs(RowOpSpec::parse("softmax:64x262144:bf16"), Search::fast)[0].single);
}

TEST(TritonRowSpace, DeclinesLayerNormAndRequestsAreShapeFree) {
  EXPECT_NE(triton_rowops::unsupported_reason(RowOpSpec::parse("layernorm:8x1024:bf16")), "");
  EXPECT_TRUE(triton_rowops::ranked_configs(RowOpSpec::parse("layernorm:8x1024:bf16"), Search::fast).empty());
  const triton_rowops::TritonRowConfig c{4096, 1, 8, true};
  // Rows are a runtime value; the op, dtypes and variant are compiled in.
  EXPECT_EQ(triton_rowops::compile_request(c, RowOpSpec::parse("softmax:8x4096:bf16")),
            triton_rowops::compile_request(c, RowOpSpec::parse("softmax:9999x4096:bf16")));
  EXPECT_NE(triton_rowops::compile_request(c, RowOpSpec::parse("softmax:8x4096:bf16")),
            triton_rowops::compile_request(c, RowOpSpec::parse("softmax+valid:8x4096:bf16")));
  EXPECT_NE(triton_rowops::compile_request(c, RowOpSpec::parse("rmsnorm:8x4096:bf16")),
            triton_rowops::compile_request(c, RowOpSpec::parse("rmsnorm+residual:8x4096:bf16")));
}

TEST(CuteRowSpace, ConfigsHoldTheRowAndListOnce) {
  for (const char* text : kShapes) {
    RowOpSpec s = RowOpSpec::parse(text);
    const bool fits = s.cols % (16 / dtype_bytes(s.in)) == 0;
    EXPECT_EQ(cute_rowops::unsupported_reason(s).empty(), fits) << text;
    auto all = cute_rowops::ranked_configs(s, Search::exhaustive);
    EXPECT_EQ(all.empty(), !fits) << text;
    std::set<std::string> names;
    for (const auto& c : all) {
      EXPECT_EQ(cute_rowops::illegal_reason(c, s), "") << c.name();
      EXPECT_GE(c.capacity(), s.cols);
      EXPECT_TRUE(names.insert(c.name()).second) << c.name();
      EXPECT_EQ(cute_rowops::CuteRowConfig::from_json(c.to_json()), c);
    }
    EXPECT_LE(cute_rowops::ranked_configs(s, Search::fast).size(), 4u);
  }
  // A row no CTA holds goes to a cluster; one that fits does not.
  auto long_row = cute_rowops::ranked_configs(RowOpSpec::parse("rmsnorm:1024x262144:bf16"), Search::fast);
  ASSERT_FALSE(long_row.empty());
  EXPECT_GT(long_row[0].cluster, 1);
  EXPECT_EQ(cute_rowops::ranked_configs(RowOpSpec::parse("softmax:65536x4096:bf16"), Search::fast)[0].cluster, 1);
  EXPECT_NE(cute_rowops::illegal_reason({.threads = 256, .rows_per_cta = 2, .vec = 8, .iters = 1, .cluster = 2},
                                        RowOpSpec::parse("softmax:8x512:bf16")),
            "");
  EXPECT_NE(cute_rowops::unsupported_reason(RowOpSpec::parse("layernorm:8x1024:bf16")), "");
}

namespace {
// One candidate of each op compiles, and another row count of the same op compiles nothing.
void compiles_once_per_op(const char* name) {
  auto backend = find_backend<RowOpSpec>(name);
  ASSERT_TRUE(backend) << name;
  for (const char* text : {"softmax+valid:300x4096:bf16->f32", "rmsnorm+residual:64x16384:bf16"}) {
    RowOpSpec s = RowOpSpec::parse(text);
    auto cands = backend->candidates(s, DeviceInfo::assumed_hopper(), {.level = Search::fast, .top_k = 1});
    ASSERT_EQ(cands.size(), 1u) << name << " " << text;
    auto fresh = backend->compile(s, cands[0], /*use_cache=*/false);
    EXPECT_TRUE(fresh.ok) << name << " " << text << ": " << fresh.log;
    RowOpSpec other = s;
    other.rows = 7;
    auto again = backend->compile(other, cands[0], /*use_cache=*/true);
    EXPECT_TRUE(again.ok && again.cached) << again.log;
  }
}
}  // namespace

TEST(TritonRowCompile, SoftmaxAndRmsNormCompileToSm90Cubins) {
  if (!jit::triton::env().error.empty()) GTEST_SKIP() << jit::triton::env().error;
  compiles_once_per_op("triton");
}

TEST(CuteRowCompile, SoftmaxAndRmsNormCompileToLoadableSharedObjects) {
  if (!jit::cute_dsl::compile_unavailable().empty())
    GTEST_SKIP() << "cannot compile CuTe DSL kernels here: " << jit::cute_dsl::compile_unavailable();
  compiles_once_per_op("cute");
}

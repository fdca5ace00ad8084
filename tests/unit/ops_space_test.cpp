// Row-op specs and their config space on the CPU; every config of the benchmark shapes compiles.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <thread>

#include "backends/rowop/native/kernel.hpp"
#include "gemmforge/error.hpp"

using namespace gf;

TEST(RowOpSpec, ParsesAndKeys) {
  auto s = RowOpSpec::parse("rmsnorm+residual:4096x4096:bf16->f32");
  EXPECT_EQ(s.kind, RowOpKind::rmsnorm);
  EXPECT_TRUE(s.residual);
  EXPECT_EQ(s.out, DType::f32);
  EXPECT_EQ(s.key(), "rmsnorm+residual:4096x4096:bf16->f32");
  EXPECT_EQ(RowOpSpec::parse("softmax:8x128").key(), "softmax:8x128:bf16");
  EXPECT_EQ(RowOpSpec::parse("softmax+valid:8x128:f16").key(), "softmax+valid:8x128:f16");
  for (const char* bad : {"softmax", "softmax:0x16", "softmax:16", "softmax:4x4:bf17", "norm:4x4",
                          "softmax+residual:4x4", "layernorm+valid:4x4", "softmax:4x4:e4m3"})
    EXPECT_THROW(RowOpSpec::parse(bad), Error) << bad;
}

TEST(RowOpSpace, EveryShapeHasLegalConfigs) {
  for (const char* text : {"softmax:262144x1024:bf16", "softmax:1024x262144:bf16", "rmsnorm:4096x65536:bf16",
                           "rmsnorm+residual:16384x16384:f16", "layernorm:7x1000:f32", "softmax:5x1:bf16",
                           "softmax+valid:3x77:bf16->f32", "softmax:2x524288:bf16"}) {
    auto s = RowOpSpec::parse(text);
    auto configs = rowops::row_configs(s);
    ASSERT_FALSE(configs.empty()) << text;
    for (const auto& c : configs) {
      EXPECT_EQ(rowops::illegal_reason(c, s), "") << text << " " << c.name(s);
      EXPECT_EQ(rowops::RowConfig::from_json(c.to_json()), c);
      EXPECT_LE(c.values_per_thread(s.cols), 64);
    }
    EXPECT_EQ(configs.front().vec, rowops::widest_vec(s)) << text;
  }
  // 1024 x 262144 bf16 needs a cluster to hold the row in registers (512 KiB), or two passes.
  auto long_rows = rowops::row_configs(RowOpSpec::parse("softmax:1024x262144:bf16"));
  for (const auto& c : long_rows)
    EXPECT_TRUE(c.cluster >= 2 || c.stream) << c.name(RowOpSpec::parse("softmax:1024x262144:bf16"));
  EXPECT_FALSE(long_rows.front().stream) << "one pass ranks first where it fits";
  // 2M columns: 128 values a thread even over 16 CTAs of 1024 threads.
  for (const auto& c : rowops::row_configs(RowOpSpec::parse("softmax:2x2097152:bf16"))) EXPECT_TRUE(c.stream);
  // Bulk copies: offered for long rows, with their stages within an SM's shared memory, and never
  // for rows that are not whole 16-byte units.
  RowOpSpec res = RowOpSpec::parse("rmsnorm+residual:4096x65536:bf16");
  int bulk = 0;
  for (const auto& c : rowops::row_configs(res))
    if (c.bulk) {
      ++bulk;
      EXPECT_TRUE(c.rows_per_cta == 1 && c.stages >= 1) << c.name(res);
      EXPECT_LE(c.smem_bytes(res), 226 * 1024) << c.name(res);
    }
  EXPECT_GT(bulk, 0);
  for (const auto& c : rowops::row_configs(RowOpSpec::parse("softmax:3x1001:bf16"))) EXPECT_FALSE(c.bulk);
}

TEST(RowOpSpace, DefaultsFollowTheMeasurements) {
  // Rows one CTA holds: registers, no cluster, and no register rows fed by bulk copies among the
  // first 16 (they measured slower there). Longer rows: register rows fed by bulk copies first.
  for (const char* text : {"softmax:262144x1024:bf16", "rmsnorm:65536x4096:bf16", "softmax:16384x16384:bf16"}) {
    auto s = RowOpSpec::parse(text);
    auto configs = rowops::row_configs(s);
    EXPECT_TRUE(!configs.front().stream && !configs.front().bulk && configs.front().cluster == 1) << text;
    for (size_t i = 0; i < configs.size() && i < 16; ++i)
      EXPECT_FALSE(configs[i].bulk && !configs[i].stream) << text << " " << configs[i].name(s);
  }
  for (const char* text : {"softmax:4096x65536:bf16", "rmsnorm:1024x262144:bf16"}) {
    auto s = RowOpSpec::parse(text);
    const auto c = rowops::default_config(s);
    EXPECT_TRUE(c.bulk && !c.stream) << text << " " << c.name(s);
  }
}

TEST(RowOpSpace, ListsEachConfigOnceWithFewClusterRegisterRowsForLongRows) {
  for (const char* text :
       {"softmax:1024x262144:bf16", "rmsnorm:4096x65536:bf16", "softmax:16384x16384:bf16", "layernorm:7x1000:f32"}) {
    auto s = RowOpSpec::parse(text);
    auto configs = rowops::row_configs(s);
    std::set<std::string> names;
    for (const auto& c : configs) EXPECT_TRUE(names.insert(c.name(s)).second) << text << " twice: " << c.name(s);
  }
  // Where streaming leads, register rows over a cluster (25-50% slower there) keep one slot in four.
  for (const char* text : {"softmax:1024x262144:bf16", "rmsnorm:4096x65536:bf16"}) {
    auto s = RowOpSpec::parse(text);
    auto configs = rowops::row_configs(s);
    int resident = 0;
    for (size_t i = 0; i < configs.size() && i < 16; ++i) resident += !configs[i].stream && !configs[i].bulk;
    EXPECT_LE(resident, 4) << text;
  }
}

TEST(RowOpSpace, PairMaxIsTriedJustAheadOfEachBf16SoftmaxRegisterRow) {
  // Faster at 16k and 256k columns, slower over clusters of two at 64k: the tuner picks.
  auto s = RowOpSpec::parse("softmax:4096x65536:bf16");
  auto configs = rowops::row_configs(s);
  int pairs = 0;
  for (size_t i = 0; i < configs.size(); ++i) {
    const auto& c = configs[i];
    const bool in_registers = !c.stream && c.vec == 8;
    if (!c.pair_max) {
      // Its pair twin is just ahead of it.
      rowops::RowConfig twin = c;
      twin.pair_max = true;
      EXPECT_EQ(in_registers, i > 0 && configs[i - 1] == twin) << c.name(s);
      continue;
    }
    ++pairs;
    EXPECT_TRUE(in_registers) << c.name(s);
    EXPECT_NE(c.name(s).find("_h2"), std::string::npos);
    EXPECT_EQ(rowops::RowConfig::from_json(c.to_json()), c);
  }
  EXPECT_GT(pairs, 8);
  for (const char* text : {"softmax:4096x65536:f16", "softmax:4096x65536:f32", "rmsnorm:4096x65536:bf16"}) {
    auto other = RowOpSpec::parse(text);
    for (const auto& c : rowops::row_configs(other, true)) EXPECT_FALSE(c.pair_max) << c.name(other);
  }
  rowops::RowConfig streaming = configs.front();
  streaming.stream = true;
  streaming.pair_max = true;
  EXPECT_NE(rowops::illegal_reason(streaming, s), "");
}

TEST(RowOpSpace, FirstConfigsCountAConfigAndItsPairTwinAsOne) {
  auto s = RowOpSpec::parse("softmax:1024x262144:bf16");
  auto all = rowops::row_configs(s);
  auto first = rowops::first_configs(all, 4);
  ASSERT_GT(first.size(), 4u);
  ASSERT_LE(first.size(), 8u);
  EXPECT_TRUE(std::equal(first.begin(), first.end(), all.begin())) << "a prefix of the list";
  EXPECT_FALSE(first.back().pair_max) << "no twin cut from its config";
  int plain = 0;
  for (const auto& c : first) plain += !c.pair_max;
  EXPECT_EQ(plain, 4);
  EXPECT_EQ(rowops::first_configs(all, 0).size(), all.size());
  EXPECT_EQ(rowops::first_configs(all, 100000).size(), all.size());
  // Without twins it is a plain cut.
  auto norm = rowops::row_configs(RowOpSpec::parse("rmsnorm:1024x262144:bf16"));
  EXPECT_EQ(rowops::first_configs(norm, 3).size(), 3u);
}

TEST(RowOpSpace, BulkSharedMemoryHoldsStagesAffineAndBarriers) {
  // Mirrors RowOp::bulk_rows: stages, the norms' weight (and LayerNorm's bias) over one part, then
  // stages + 1 mbarriers.
  const rowops::RowConfig c{.cluster = 8, .bulk = true, .stages = 2};
  auto softmax = RowOpSpec::parse("softmax:1024x262144:bf16");
  auto rms = RowOpSpec::parse("rmsnorm:1024x262144:bf16");
  auto ln = RowOpSpec::parse("layernorm:1024x262144:bf16");
  auto res = RowOpSpec::parse("rmsnorm+residual:1024x262144:bf16");
  const int part = 262144 / 8 * 2;
  EXPECT_EQ(c.smem_bytes(softmax), 2 * part + 3 * 8);
  EXPECT_EQ(c.smem_bytes(rms), 2 * part + part + 3 * 8);
  EXPECT_EQ(c.smem_bytes(ln), 2 * part + 2 * part + 3 * 8);
  EXPECT_EQ(c.smem_bytes(res), 2 * 2 * part + part + 3 * 8);
  EXPECT_EQ(rowops::RowConfig({256, 1, 8, 8, false, false, 0}).smem_bytes(ln), 0) << "no bulk copies";
}

TEST(RowOpSpace, StagesBelongToBulkCopies) {
  RowOpSpec s = RowOpSpec::parse("rmsnorm:1024x262144:bf16");
  EXPECT_EQ(rowops::illegal_reason({.cluster = 8, .stream = true, .bulk = true, .stages = 2}, s), "");
  EXPECT_NE(rowops::illegal_reason({.cluster = 8, .stream = true, .bulk = true}, s), "") << "bulk copies need a stage";
  EXPECT_NE(rowops::illegal_reason({.cluster = 8, .stream = true, .stages = 2}, s), "") << "stages without bulk copies";
  EXPECT_EQ(rowops::illegal_reason({.cluster = 16}, s), "") << "registers over a cluster of 16";
  EXPECT_EQ(rowops::illegal_reason({.cluster = 16, .bulk = true, .stages = 2}, s), "")
      << "registers, fed by bulk copies";
  EXPECT_NE(rowops::illegal_reason({.cluster = 8, .bulk = true, .stages = 2}, s), "") << "128 values a thread";
  EXPECT_NE(rowops::illegal_reason({.stream = true, .bulk = true, .stages = 4}, s), "") << "4 x 512 KiB of stages";
  for (const auto& c : rowops::row_configs(s)) EXPECT_EQ(rowops::RowConfig::from_json(c.to_json()), c);
  // A decision stored before stages existed reads back as an illegal config: the runtime then
  // falls back to its default instead of compiling it.
  EXPECT_NE(
      rowops::illegal_reason(
          rowops::RowConfig::from_json(
              {{"threads", 256}, {"rows_per_cta", 1}, {"vec", 8}, {"cluster", 8}, {"stream", true}, {"bulk", true}}),
          s),
      "");
}

TEST(RowOpSpace, MisalignedPointersGetALegalConfigThatSuitsThem) {
  // Addresses only: nothing is dereferenced. 8-byte aligned (no 16-byte vectors, no bulk copies),
  // then 2-byte aligned (scalar f16 only), then not even element-aligned.
  for (const char* text : {"rmsnorm+residual:8x262144:f16", "rmsnorm:2x524288:bf16", "softmax:64x4096:bf16"}) {
    RowOpSpec s = RowOpSpec::parse(text);
    for (uintptr_t offset : {uintptr_t(8), uintptr_t(2)}) {
      RowOpArgs a;
      a.x = reinterpret_cast<const void*>(uintptr_t(1) << 20 | offset);
      a.y = reinterpret_cast<void*>(uintptr_t(2) << 20);
      a.weight = a.residual = a.x;
      a.residual_out = a.y;
      rowops::RowConfig c = rowops::config_for_pointers(s, rowops::default_config(s), a);
      EXPECT_EQ(rowops::illegal_reason(c, s), "") << text << " " << c.name(s);
      EXPECT_EQ(rowops::misaligned(s, c, a), "") << text << " " << c.name(s);
      EXPECT_FALSE(c.bulk) << text;
      EXPECT_LE(c.vec * 2, int(offset)) << text << " " << c.name(s);
    }
    RowOpArgs odd;
    odd.x = reinterpret_cast<const void*>(uintptr_t(1) << 20 | 1);
    odd.y = reinterpret_cast<void*>(uintptr_t(2) << 20);
    odd.weight = odd.residual = odd.x;
    odd.residual_out = odd.y;
    EXPECT_THROW(rowops::config_for_pointers(s, rowops::default_config(s), odd), Error) << text;
  }
}

TEST(RowOpSpace, BenchmarkShapesCompileWithoutSpills) {
  std::vector<std::pair<RowOpSpec, rowops::RowConfig>> work;
  for (const char* op : {"softmax", "rmsnorm+residual", "layernorm"})
    for (const char* shape : {"262144x1024", "65536x4096", "16384x16384", "4096x65536", "1024x262144"}) {
      auto s = RowOpSpec::parse(std::string(op) + ":" + shape + ":bf16");
      auto configs = rowops::row_configs(s);
      for (size_t i = 0; i < configs.size() && i < 4; ++i) work.emplace_back(s, configs[i]);
      // and the first register-resident row fed by bulk copies
      for (const auto& c : configs)
        if (c.bulk && !c.stream) {
          work.emplace_back(s, c);
          break;
        }
    }
  for (const char* text :
       {"softmax+valid:2x524288:bf16", "rmsnorm+residual:2x524288:bf16", "layernorm:2x524288:f16->f32"}) {
    auto s = RowOpSpec::parse(text);
    work.emplace_back(s, rowops::row_configs(s).front());
  }
  std::vector<jit::Compiled> out(work.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::max(2u, std::thread::hardware_concurrency()); ++t)
    threads.emplace_back([&] {
      for (size_t i = next++; i < work.size(); i = next++)
        out[i] = rowops::compile_row_kernel(work[i].first, work[i].second, true);
    });
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < work.size(); ++i) {
    EXPECT_TRUE(out[i].report.ok) << work[i].second.name(work[i].first) << "\n" << out[i].report.log;
    EXPECT_EQ(out[i].report.spill_bytes, 0) << work[i].second.name(work[i].first);
  }
}

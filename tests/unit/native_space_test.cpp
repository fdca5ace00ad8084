// The native backend's search space and compile path, on the CPU (NVRTC needs no GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <thread>

#include "backends/gemm/native/codegen.hpp"
#include "backends/gemm/native/compile.hpp"
#include "backends/gemm/native/space.hpp"
#include "stored_race.hpp"

using namespace gf;
using native::NativeConfig;

namespace {
// ptxas serialized the kernel's wgmma: a group in flight across a loop's back edge or a run-time
// choice of accumulators (C7514), or an instruction writing accumulators while one is in flight
// (C7515).
bool wgmma_serialized(const std::string& log) {
  return log.find("C7514") != std::string::npos || log.find("C7515") != std::string::npos;
}
}  // namespace

TEST(NativeSpace, SizesByLevelAndUniqueNames) {
  DeviceInfo d = DeviceInfo::assumed_hopper();
  for (const char* spec :
       {"4096x6144x4096:bf16", "16x4096x14336:bf16", "77x1000x1000:bf16", "512x4096x4096:bf16",
        "4096x28672x4096:bf16:swiglu", "4096x4096x4096:bf16:residual", "16x4096x4096:bf16:residual"}) {
    GemmProblem p = GemmProblem::parse(spec);
    auto fast = native::ranked_configs(p, d, Search::fast);
    auto normal = native::ranked_configs(p, d, Search::normal);
    auto all = native::ranked_configs(p, d, Search::exhaustive);
    // The model's list (and its best ping-pong kernel, where it holds none and an SM has two
    // tiles; paired, its tile unpaired too), then swap-AB's own (small M): fast 8 + 2 + 4, default
    // 30 + 2 + 6.
    auto part = [](std::vector<NativeConfig> v, bool swap) {
      std::erase_if(v, [&](const NativeConfig& c) { return c.swap_ab != swap; });
      return v;
    };
    EXPECT_LE(part(fast, false).size(), 10u) << spec;
    EXPECT_GE(part(fast, false).size(), 4u) << spec;
    EXPECT_EQ(part(fast, true).size(), p.m <= native::kSwapMaxM ? 4u : 0u) << spec;
    EXPECT_LE(part(normal, false).size(), 32u) << spec;
    EXPECT_LE(part(normal, true).size(), 6u) << spec;
    EXPECT_GE(all.size(), normal.size()) << spec;
    std::set<std::string> names;
    for (const auto& c : all) {
      EXPECT_EQ(native::illegal_reason(c, p, d), "") << c.name(p);
      EXPECT_TRUE(names.insert(c.name(p)).second) << "duplicate " << c.name(p);
      EXPECT_EQ(NativeConfig::from_json(c.to_json()), c);
    }
    // fast is the head of default: the cost model ranks once, and a ping-pong kernel appended to
    // fast's 8 is default's too.
    for (bool swap : {false, true}) {
      auto f = part(fast, swap), n = part(normal, swap);
      for (size_t i = 0; i < std::min<size_t>(f.size(), 8); ++i) EXPECT_EQ(f[i], n[i]);
      for (const NativeConfig& c : f) EXPECT_NE(std::find(n.begin(), n.end(), c), n.end()) << c.name(p);
    }
  }
}

// Swap-AB: the kernel runs the transposed problem; offered at small M in layout tn without a gate
// or block scales, stored from registers.
TEST(NativeSpace, SwapAB) {
  DeviceInfo d = DeviceInfo::assumed_hopper();
  const GemmProblem p = GemmProblem::parse("16x4096x1024:e5m2xe4m3:bias+gelu");
  const GemmProblem t = native::kernel_problem(NativeConfig{.swap_ab = true}, p);
  EXPECT_EQ(t.m, 4096);
  EXPECT_EQ(t.n, 16);
  EXPECT_EQ(t.a, DType::e4m3);
  EXPECT_EQ(t.b, DType::e5m2);
  EXPECT_EQ(t.epilogue.bias, BiasKind::row);  // the problem's column bias: the kernel's rows
  EXPECT_EQ(t.epilogue.act, Activation::gelu);
  EXPECT_EQ(native::kernel_problem(NativeConfig{}, p), p);

  auto has_swap = [&](const char* spec) {
    auto all = native::ranked_configs(GemmProblem::parse(spec), d, Search::exhaustive);
    return std::any_of(all.begin(), all.end(), [](const NativeConfig& c) { return c.swap_ab; });
  };
  for (const char* spec : {"1x4096x4096:bf16", "8x6144x4096:f16:residual", "64x4096x4096:bf16:bias",
                           "77x3584x3584:bf16", "128x4096x4096:bf16", "16x4096x4096:e4m3:scale=rowcol"})
    EXPECT_TRUE(has_swap(spec)) << spec;
  // The problem's rows are the kernel's N, whole in one tile: up to 128 (77 takes n80).
  const auto at77 = native::ranked_configs(GemmProblem::parse("77x3584x3584:bf16"), d, Search::fast);
  EXPECT_TRUE(std::any_of(at77.begin(), at77.end(), [](const NativeConfig& c) { return c.swap_ab && c.bn == 80; }));
  for (const char* spec :
       {"129x4096x4096:bf16", "16x28672x4096:bf16:swiglu", "16x4096x4096:bf16:nn", "16x4096x4096:e4m3:scale=block128"})
    EXPECT_FALSE(has_swap(spec)) << spec;

  NativeConfig c{.bm = 64, .bn = 16, .stages = 8, .consumers = 1, .swap_ab = true};
  const GemmProblem q = GemmProblem::parse("16x4096x4096:bf16");
  EXPECT_EQ(native::illegal_reason(c, q, d), "");
  c.store_boxes = 1;
  EXPECT_NE(native::illegal_reason(c, q, d), "");
  EXPECT_NE(native::illegal_reason(NativeConfig{.bm = 64, .bn = 16, .consumers = 1, .swap_ab = true},
                                   GemmProblem::parse("16x4096x4096:bf16:nn"), d),
            "");
  EXPECT_NE(c.name(q).find("_swap"), std::string::npos);
}

TEST(NativeSpace, KernelSymbolsAreIdentifiersNamedAfterTheCandidate) {
  DeviceInfo d = DeviceInfo::assumed_hopper();
  GemmProblem p = GemmProblem::parse("300x384x512:f16:alpha=0.5+beta=2");
  std::set<std::string> symbols;
  for (const auto& c : native::ranked_configs(p, d, Search::normal)) {
    const std::string sym = native::kernel_symbol(c, p);
    EXPECT_TRUE(std::isalpha(static_cast<unsigned char>(sym[0]))) << sym;
    EXPECT_TRUE(std::all_of(sym.begin(), sym.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
    })) << sym;
    EXPECT_NE(native::instantiation_source(c, p).find(sym + "("), std::string::npos) << sym;
    EXPECT_TRUE(symbols.insert(sym).second) << "two candidates share " << sym;
  }
}

// 2x2 quads: offered by the exhaustive list alone (they lost every race: only 30 fit at once),
// at large M; never at small M, with swap-AB or split-K. A quad is neither pair's kind.
TEST(NativeSpace, QuadsInTheExhaustiveListAtLargeM) {
  DeviceInfo d = DeviceInfo::assumed_hopper();
  for (const char* spec : {"4096x28672x4096:e4m3:scale=rowcol", "8192x4096x14336:bf16"}) {
    GemmProblem p = GemmProblem::parse(spec);
    for (Search level : {Search::fast, Search::normal})
      for (const auto& c : native::ranked_configs(p, d, level)) EXPECT_NE(c.cluster, 4) << c.name(p);
    size_t quads = 0;
    for (const auto& c : native::ranked_configs(p, d, Search::exhaustive))
      if (c.cluster == 4) {
        ++quads;
        EXPECT_NE(c.name(p).find("_x4_"), std::string::npos) << c.name(p);
        EXPECT_EQ(c.pair_m() * c.pair_n(), 4);
        EXPECT_EQ(c.split_k, 1);
      }
    EXPECT_GT(quads, 0u) << spec;
  }
  for (const char* spec : {"128x4096x4096:bf16", "16x4096x14336:e4m3:scale=rowcol", "77x1000x1000:bf16"})
    for (const auto& c : native::ranked_configs(GemmProblem::parse(spec), d, Search::exhaustive))
      EXPECT_NE(c.cluster, 4) << spec << " " << c.name(GemmProblem::parse(spec));
  GemmProblem big = GemmProblem::parse("4096x4096x4096:bf16");
  EXPECT_EQ(native::illegal_reason({.cluster = 3}, big, d), "clusters are 1, 2 or 4 (2x2) CTAs");
  EXPECT_EQ(native::illegal_reason({.cluster = 4, .cluster_m = true}, big, d), "cluster_m stacks a pair");
}

TEST(NativeSpace, ShortListsKeepPairsAndWholeTileStaging) {
  DeviceInfo d = DeviceInfo::assumed_hopper();
  // The fast list holds pairs of its best tile (v8: 17% faster at 1000x4096x1000).
  GemmProblem p = GemmProblem::parse("1000x4096x1000:bf16");
  auto fast = native::ranked_configs(p, d, Search::fast);
  EXPECT_TRUE(std::any_of(fast.begin(), fast.end(), [&](const NativeConfig& c) {
    return c.bm == fast.front().bm && c.bn == fast.front().bn && c.cluster == 2;
  }));
  // With a C input the whole tile can be staged (v9), and split-K stays where whole tiles leave
  // SMs idle.
  GemmProblem r = GemmProblem::parse("4096x4096x4096:bf16:residual");
  auto all = native::ranked_configs(r, d, Search::exhaustive);
  EXPECT_TRUE(
      std::any_of(all.begin(), all.end(), [](const NativeConfig& c) { return c.bn == 256 && c.store_boxes == 4; }));
  for (const auto& c : all) EXPECT_EQ(c.split_k, 1) << c.name(r);
}

TEST(NativeSpace, PrunesWhatCannotFit) {
  DeviceInfo d = DeviceInfo::assumed_hopper();
  GemmProblem p = GemmProblem::parse("4096x4096x4096:bf16");
  EXPECT_NE(native::illegal_reason({.bm = 256, .bn = 256, .stages = 2}, p, d),
            "");  // 256 accumulators a thread
  EXPECT_NE(native::illegal_reason({.bm = 128, .bn = 256, .stages = 6}, p, d),
            "");  // 289 KiB of shared memory
  EXPECT_NE(native::illegal_reason({.bm = 128, .bn = 96}, GemmProblem::parse("64x64x64:bf16:nn"), d), "");
  EXPECT_NE(native::illegal_reason({.bm = 128, .bn = 128, .split_k = 4}, GemmProblem::parse("64x64x128:bf16"), d), "");
  EXPECT_EQ(native::illegal_reason({.bm = 128, .bn = 256}, p, d), "");
  // Pairs split K too: their CTAs take the same slice of adjacent tiles.
  EXPECT_EQ(native::illegal_reason({.bm = 64,
                                    .bn = 128,
                                    .stages = 8,
                                    .consumers = 2,
                                    .pingpong = true,
                                    .split_k = 2,
                                    .cluster = 2,
                                    .cluster_m = true},
                                   GemmProblem::parse("128x4096x4096:bf16"), d),
            "");
  // 192 accumulators a thread fit two consumers' 232 registers, not beside what spills (ptxas).
  const NativeConfig wide{.bm = 256, .bn = 192, .stages = 3, .store_boxes = 1};
  EXPECT_EQ(native::illegal_reason(wide, p, d), "");
  EXPECT_NE(native::illegal_reason(wide, GemmProblem::parse("4096x4096x4096:bf16:bias+gelu_tanh"), d), "");
  EXPECT_NE(native::illegal_reason({.bm = 256, .bn = 192, .stages = 3, .split_k = 2}, p, d), "");      // split-K
  EXPECT_NE(native::illegal_reason({.bm = 256, .bn = 192, .stages = 2, .store_boxes = 3}, p, d), "");  // 3 boxes
  EXPECT_NE(native::illegal_reason({.bm = 256, .bn = 192, .stages = 3, .consumers = 1}, p, d), "");    // one consumer
}

TEST(NativeSpace, Fp8PromotesWhereBlockScalesNeedIt) {
  DeviceInfo d = DeviceInfo::assumed_hopper();
  GemmProblem block = GemmProblem::parse("4096x4096x4096:e4m3:scale=block128");
  auto configs = native::ranked_configs(block, d, Search::exhaustive);
  ASSERT_FALSE(configs.empty());
  for (const auto& c : configs) {
    EXPECT_TRUE(c.promote) << c.name(block);
    EXPECT_TRUE(128 % c.bn == 0 || c.bn == 192) << c.name(block);
  }
  // 192-wide tiles span two blocks of B, wider ones would spill their doubled accumulators.
  EXPECT_TRUE(std::any_of(configs.begin(), configs.end(), [](const NativeConfig& c) { return c.bn == 192; }));
  EXPECT_NE(native::illegal_reason({.bm = 128, .bn = 128}, block, d), "");  // not promoted
  EXPECT_EQ(native::illegal_reason({.bm = 128, .bn = 192, .stages = 4, .consumers = 2, .promote = true}, block, d), "");
  EXPECT_NE(native::illegal_reason({.bm = 128, .bn = 160, .stages = 4, .consumers = 2, .promote = true}, block, d),
            "");  // three blocks of B for some tiles
  // Per-tensor scales: both accumulations are candidates; promotion doubles the accumulators.
  GemmProblem tensor = GemmProblem::parse("4096x4096x4096:e4m3:scale=tensor");
  auto all = native::ranked_configs(tensor, d, Search::exhaustive);
  EXPECT_TRUE(std::any_of(all.begin(), all.end(), [](const NativeConfig& c) { return c.promote; }));
  EXPECT_TRUE(std::any_of(all.begin(), all.end(), [](const NativeConfig& c) { return !c.promote; }));
  EXPECT_EQ(native::illegal_reason({.bm = 128, .bn = 256, .stages = 4}, tensor, d), "");
  EXPECT_NE(native::illegal_reason({.bm = 128, .bn = 256, .stages = 4, .promote = true}, tensor, d), "");
  EXPECT_NE(native::illegal_reason({.bm = 128, .bn = 128, .promote = true}, GemmProblem::parse("64x64x64:bf16"), d),
            "");
  // Names tell the k-block (128 fp8 elements) and the promotion apart; bf16 names are unchanged.
  EXPECT_NE(NativeConfig{.promote = true}.name(tensor).find("x128_"), std::string::npos);
  EXPECT_NE(NativeConfig{.promote = true}.name(tensor).find("_promote"), std::string::npos);
  // Block scales: promoted, with B's block across the whole tile.
  EXPECT_EQ(native::illegal_reason({.bm = 128, .bn = 128, .stages = 4, .consumers = 2, .promote = true}, block, d), "");
  EXPECT_NE(native::illegal_reason({.bm = 128, .bn = 128, .stages = 4, .consumers = 2}, block, d), "");
  EXPECT_NE(native::illegal_reason({.bm = 128, .bn = 256, .stages = 4, .consumers = 2, .promote = true}, block, d), "");
  // Each stage holds A's block scales of the tile's rows (TMA) beside its A and B tiles.
  const NativeConfig c128{.bm = 128, .bn = 128, .stages = 6, .consumers = 2, .promote = true};
  EXPECT_EQ(c128.smem_bytes(block), c128.smem_bytes(tensor) + 6 * (128 + 32) * 4);  // BM + 3 from a 16-byte boundary
  EXPECT_NE(native::unsupported_reason(GemmProblem::parse("1048576x128x1048576:e4m3:scale=block128")), "")
      << "A's block scales past TMA's 32-bit coordinates";
  // An fp8 D: stored from registers.
  const GemmProblem fp8_out = GemmProblem::parse("4096x4096x4096:e4m3->e4m3:scale=tensor");
  EXPECT_EQ(native::unsupported_reason(fp8_out), "");
  EXPECT_NE(native::illegal_reason({.bm = 128, .bn = 128, .store_boxes = 2}, fp8_out, d), "");
  EXPECT_EQ(native::illegal_reason({.bm = 128, .bn = 128}, fp8_out, d), "");
  EXPECT_NE(NativeConfig{}.name(GemmProblem::parse("64x64x64:bf16")).find("128x256x64_"), std::string::npos);
  EXPECT_NE(native::unsupported_reason(GemmProblem::parse("64x64x72:e4m3")), "");
  EXPECT_EQ(native::unsupported_reason(GemmProblem::parse("64x64x80:e4m3:scale=rowcol")), "");
}

// Swap-AB's tokens in two tiles (77 tokens: two of 48), paired along N to share the weights' tile
// as cuBLASLt's pick there does: in the exhaustive list, until raced.
TEST(NativeSpace, SwapAbTwoTokenTilesInTheExhaustiveList) {
  const DeviceInfo d = DeviceInfo::assumed_hopper();
  const GemmProblem p = GemmProblem::parse("77x3584x3584:bf16");
  auto halves = [&](Search level) {
    const auto list = native::ranked_configs(p, d, level);
    return std::count_if(list.begin(), list.end(), [](const NativeConfig& c) { return c.swap_ab && c.bn == 48; });
  };
  EXPECT_GT(halves(Search::exhaustive), 0);
  EXPECT_EQ(halves(Search::normal), 0);
  EXPECT_EQ(halves(Search::fast), 0);
  for (const NativeConfig& c : native::ranked_configs(p, d, Search::exhaustive))
    EXPECT_TRUE(!c.swap_ab || c.bn == 80 || (c.bn == 48 && c.pair_n() == 2)) << c.name(p);
  // 20 tokens: one tile of 32, or two of 16 in pairs.
  const GemmProblem twenty = GemmProblem::parse("20x4096x4096:bf16");
  for (const NativeConfig& c : native::ranked_configs(twenty, d, Search::exhaustive))
    EXPECT_TRUE(!c.swap_ab || c.bn == 32 || (c.bn == 16 && c.pair_n() == 2)) << c.name(twenty);
  // 16 tokens fit one tile of 16: nothing narrower.
  for (const NativeConfig& c : native::ranked_configs(GemmProblem::parse("16x4096x4096:bf16"), d, Search::exhaustive))
    EXPECT_TRUE(!c.swap_ab || c.bn == 16);
}

// Promotion by halves: promoted, not ahead, halves of a multiple of 16 columns (wgmma's shapes),
// named and stored apart. The short lists of block scales hold it at 192 wide, where promotion
// ahead does not fit (it won the block race at 4096x28672x4096, 2026-12-06); rowwise ones, not
// raced, never.
TEST(NativeSpace, PromotionByHalves) {
  DeviceInfo d = DeviceInfo::assumed_hopper();
  GemmProblem block = GemmProblem::parse("4096x4096x4096:e4m3:scale=block128");
  const NativeConfig halves{.bm = 128, .bn = 192, .stages = 5, .consumers = 2, .promote = true, .halves = true};
  EXPECT_EQ(native::illegal_reason(halves, block, d), "");
  NativeConfig c = halves;
  c.promote_ahead = true;
  EXPECT_NE(native::illegal_reason(c, block, d), "");
  c = halves;
  c.promote = false;
  EXPECT_NE(native::illegal_reason(c, GemmProblem::parse("4096x4096x4096:e4m3:scale=tensor"), d), "");
  c = halves;
  c.bn = 112;  // halves of 56 columns: no wgmma of that shape here
  EXPECT_NE(native::illegal_reason(c, GemmProblem::parse("4096x4096x4096:e4m3:scale=tensor"), d), "");
  EXPECT_TRUE(halves.name(block).ends_with("_promote_halves"));
  EXPECT_EQ(NativeConfig::from_json(halves.to_json()), halves);
  EXPECT_FALSE(NativeConfig{}.to_json().contains("halves"));  // stored decisions of before keep their keys
  auto count = [&](Search level) {
    auto all = native::ranked_configs(block, d, level);
    return std::count_if(all.begin(), all.end(), [](const NativeConfig& x) { return x.halves; });
  };
  EXPECT_GT(count(Search::exhaustive), 0);
  EXPECT_GT(count(Search::fast), 0);
  // 192 wide alone, with a C input (whose whole-tile staging is a variant of its own) too.
  for (const GemmProblem& q : {block, GemmProblem::parse("4096x4096x4096:e4m3:scale=block128+residual")})
    for (Search level : {Search::fast, Search::normal})
      for (const NativeConfig& x : native::ranked_configs(q, d, level))
        EXPECT_TRUE(!x.halves || x.bn == 192) << x.name(q);
  const GemmProblem rowwise = GemmProblem::parse("4096x4096x4096:e4m3:scale=rowcol");
  for (const NativeConfig& x : native::ranked_configs(rowwise, d, Search::normal)) EXPECT_FALSE(x.halves);
}

TEST(NativeSpace, SmallMPrefersSplitK) {
  DeviceInfo d = DeviceInfo::assumed_hopper();
  auto best = native::ranked_configs(GemmProblem::parse("16x4096x14336:bf16"), d, Search::fast).front();
  EXPECT_GT(best.split_k, 1) << "48 tiles cannot fill 132 SMs without splitting K";
  EXPECT_EQ(best.bm, 64);
}

// Swap-AB's first two places in the fast list: its best whole-K kernel and its best split one
// (both won races at 16 tokens), whichever the model ranks first; then its next two.
TEST(NativeSpace, SwapAbFastListStartsWholeKAndSplit) {
  DeviceInfo d = DeviceInfo::assumed_hopper();
  for (const char* spec : {"16x4096x4096:bf16", "16x4096x14336:e4m3->bf16:scale=rowcol", "8x6144x4096:bf16"}) {
    std::vector<int> splits;
    for (const NativeConfig& c : native::ranked_configs(GemmProblem::parse(spec), d, Search::fast))
      if (c.swap_ab) splits.push_back(c.split_k);
    ASSERT_EQ(splits.size(), 4u) << spec;
    EXPECT_EQ(std::count(splits.begin(), splits.begin() + 2, 1), 1) << spec;
  }
}

// Ping-pong overlaps one consumer's epilogue with the other's multiplies, which the model prices
// poorly (a transcendental an element; and it won every full bf16 race at 4096 and 8192 tokens):
// the best ping-pong kernel joins the short lists where an SM has two tiles to alternate, and
// nowhere else; nothing is added where they hold one already.
TEST(NativeSpace, PingPongRacedWhereAnSmHasTwoTiles) {
  const DeviceInfo d = DeviceInfo::assumed_hopper();
  auto fast = [&](const char* spec) { return native::ranked_configs(GemmProblem::parse(spec), d, Search::fast); };
  auto pingpongs = [&](const char* spec) {
    const auto list = fast(spec);
    return std::count_if(list.begin(), list.end(), [](const NativeConfig& c) { return c.pingpong; });
  };
  for (const char* spec : {"4096x14336x4096:e4m3->bf16:scale=rowcol+bias+gelu",
                           "4096x14336x4096:e4m3->bf16:scale=rowcol", "8192x6144x4096:bf16", "4096x28672x4096:bf16"})
    EXPECT_GE(pingpongs(spec), 1) << spec;
  // The model's 8 hold none: the best appended, and, paired, its tile unpaired too.
  const auto appended = fast("8192x6144x4096:bf16");
  EXPECT_EQ(pingpongs("8192x6144x4096:bf16"), 2);
  EXPECT_TRUE(std::any_of(appended.begin(), appended.end(),
                          [](const NativeConfig& c) { return c.pingpong && c.pair_m() * c.pair_n() == 1; }));
  // e4m3 rowwise + bias + erf GELU at 4096 tokens: the 128x128 ping-pong unpaired ran 6% ahead of
  // its N-pair, which the model ranks first (H100, 2026-12-07).
  const auto gelu = fast("4096x14336x4096:e4m3->bf16:scale=rowcol+bias+gelu");
  EXPECT_TRUE(std::any_of(gelu.begin(), gelu.end(), [](const NativeConfig& c) {
    return c.pingpong && c.bm == 128 && c.bn == 128 && c.pair_m() * c.pair_n() == 1;
  }));
  // 128 tokens: the model ranks ping-pong kernels in already (896 tiles of 64 rows), nothing appended.
  EXPECT_EQ(native::ranked_configs(GemmProblem::parse("128x28672x4096:bf16:swiglu"), d, Search::fast).size(), 8u);
  // Where no SM gets two tiles (o at 128 tokens: 128 tiles of 64x64 at most), nothing is appended.
  const GemmProblem one_wave = GemmProblem::parse("128x4096x4096:bf16");
  const auto list = native::ranked_configs(one_wave, d, Search::fast);
  EXPECT_EQ(std::count_if(list.begin(), list.end(), [](const NativeConfig& c) { return !c.swap_ab; }), 8);
}

// The fast list judged by measured times, not by names (issue 26): looked up in the stored
// exhaustive races of a file (at least `at_least` of them), its best lands within 3% of each
// race's best.
static void expect_fast_list_near_best(const std::string& path, size_t at_least) {
  const auto races = test::load_races(path, "native");
  ASSERT_GE(races.size(), at_least) << path;
  for (const test::StoredRace& race : races) {
    std::vector<std::string> names;
    for (const NativeConfig& c : native::ranked_configs(race.problem, DeviceInfo::assumed_hopper(), Search::fast))
      names.push_back(c.name(race.problem));
    int twins = 0;
    EXPECT_LE(test::list_over_best(race, names, &twins), 1.03)
        << race.problem.key() << ": the race's best " << race.best_us << " us; " << twins << " of the list's "
        << names.size() << " kernels judged by their 8-stage twins";
  }
}

// On the shapes the cost model was fitted on (tests/data/fitted-races.json: full races, H200).
TEST(NativeSpace, FastListNearTheExhaustiveBestOnFittedShapes) {
  expect_fast_list_near_best(std::string(GF_TEST_DATA_DIR) + "/fitted-races.json", 10);
}

// On shapes no model constant was fitted on: every candidate of the exhaustive list's g8m rasters
// (77 tokens, H200: phi3-mini qkv on 2026-12-03 14:43 UTC, qwen2.5-7b and phi3-mini o on 2026-12-06
// 03:07 UTC).
TEST(NativeSpace, FastListNearTheExhaustiveBestOnHeldOutShapes) {
  expect_fast_list_near_best(std::string(GF_RUNS_DIR) + "/search/heldout-77-exhaustive.json", 2);
}

// fp8 rowwise decode, which no model constant was fitted on: every candidate of the exhaustive
// list's g8m rasters (llama3-8b at 16 and 128 tokens; ON AN H100, 2026-12-06 03:3x UTC).
TEST(NativeSpace, FastListNearTheExhaustiveBestOnFp8Decode) {
  for (const char* file : {"/search/fp8-rowcol-16-exhaustive-h100.json", "/search/fp8-rowcol-128-exhaustive-h100.json"})
    expect_fast_list_near_best(std::string(GF_RUNS_DIR) + file, 4);
}

// The small-M ring depth (8, 12, 16, 24 stages) in one race per GEMM: llama3-8b bf16 at 16 and 128
// tokens and fp8 rowwise, the native kernels with no cluster (swap-AB alone at 16 tokens; H100,
// 2026-12-06). In-sample for the lists' 12 stages, which this race chose.
TEST(NativeSpace, FastListNearTheExhaustiveBestOnRingDepths) {
  expect_fast_list_near_best(std::string(GF_RUNS_DIR) + "/search/deep-pipelines-small-m-h100.json", 8);
}

// fp8 block scales at 4096 tokens: every kernel of the exhaustive list's g8m rasters, with a
// wgmma group in flight across the promotion (H100, 2026-12-06 09:0x UTC). In-sample: kAheadGain
// and the list's unpaired best tile were fitted on this race.
TEST(NativeSpace, FastListNearTheExhaustiveBestOnBlockScales) {
  expect_fast_list_near_best(std::string(GF_RUNS_DIR) + "/fp8/block-race-inflight-h100.json", 2);
}

// ptxas's report on every config of the default lists: no spills, and no wgmma serialized (C7514,
// which the overlapped promotion's run-time choice of accumulators once caused; C7515).
TEST(NativeSpace, DefaultSpaceCompilesWithoutSpillsOrSerializedWgmma) {
  DeviceInfo d = DeviceInfo::assumed_hopper();
  for (const char* spec : {"4096x6144x4096:bf16", "16x28672x4096:f16->f32", "4096x4096x4096:bf16:nn",
                           "4096x28672x4096:bf16:bias+swiglu_split", "128x4096x4096:bf16:bias+gelu_tanh+residual",
                           "8192x8192x4096:bf16:bias+gelu_tanh+residual",
                           // fp8: the promoted and plain variants, block scales
                           "4096x6144x4096:e4m3:scale=rowcol+bias+gelu_tanh", "16x6144x4096:e4m3:scale=block128",
                           "4096x4096x4096:e5m2xe4m3:scale=tensor", "300x640x1040:e4m3->e4m3:scale=block128+bias",
                           "4096x4096x4096:e4m3:scale=block128",  // 128x192 tiles, two blocks of B
                           // a bias and erf GELU (its erfc form), the spill rules fitted on it
                           "4096x14336x4096:e4m3:scale=rowcol+bias+gelu", "4096x14336x4096:bf16:bias+gelu",
                           // split-K, in pairs too, beside C and per-column scales
                           "128x4096x14336:e4m3:scale=rowcol+residual", "128x4096x4096:bf16:residual",
                           // swap-AB at small M: the transposed store with C, a row bias and GELU;
                           // fp8 scales swapped, M = 77 in wgmma n80
                           "8x4096x4096:bf16:bias+gelu+residual", "77x3584x3584:e4m3:scale=rowcol+bias",
                           // rowwise scales at decode sizes: two consumers' 128-wide tiles
                           "16x28672x4096:e4m3:scale=rowcol", "128x28672x4096:e4m3:scale=rowcol"}) {
    GemmProblem p = GemmProblem::parse(spec);
    auto configs = native::ranked_configs(p, d, Search::normal);
    if (p.epilogue.scale == ScaleKind::block128)  // and the exhaustive list's promotion by halves of them
      for (size_t i = 0, n = configs.size(); i < n; ++i) {
        NativeConfig halves = configs[i];
        halves.promote_ahead = false;
        halves.halves = true;
        if (native::illegal_reason(halves, p, d).empty() &&
            std::find(configs.begin(), configs.end(), halves) == configs.end())
          configs.push_back(halves);
      }
    std::vector<native::Compiled> out(configs.size());
    std::vector<std::thread> threads;
    std::atomic<size_t> next{0};
    for (unsigned t = 0; t < std::max(2u, std::thread::hardware_concurrency()); ++t)
      threads.emplace_back([&] {
        for (size_t i = next++; i < configs.size(); i = next++) out[i] = native::compile_candidate(configs[i], p, true);
      });
    for (auto& t : threads) t.join();
    for (size_t i = 0; i < configs.size(); ++i) {
      EXPECT_TRUE(out[i].report.ok) << configs[i].name(p) << "\n" << out[i].report.log;
      EXPECT_EQ(out[i].report.spill_bytes, 0) << configs[i].name(p);
      EXPECT_FALSE(wgmma_serialized(out[i].report.log)) << configs[i].name(p) << "\n" << out[i].report.log;
    }
  }
}

TEST(NativeSpace, CacheMissThenHit) {
  GemmProblem p = GemmProblem::parse("64x64x64:bf16");
  NativeConfig c{64, 64, 4, 1, false, 1, 1, false, 8, false};
  auto cold = native::compile_candidate(c, p, /*use_cache=*/false);
  ASSERT_TRUE(cold.report.ok) << cold.report.log;
  EXPECT_FALSE(cold.report.cached);
  auto warm = native::compile_candidate(c, p, /*use_cache=*/true);
  EXPECT_TRUE(warm.report.cached);
  EXPECT_EQ(warm.cubin, cold.cubin);
  EXPECT_EQ(warm.report.registers, cold.report.registers);
  EXPECT_LT(warm.report.seconds, 0.010);
}

// The CUTLASS backend on the CPU: its catalogue, legality and ranking, the generated unit source,
// and the cache keys. tests/nvcc/ compiles a real unit; tests/gpu/ runs every kernel.
#include <gtest/gtest.h>

#include <set>

#include "backends/gemm/cutlass/codegen.hpp"
#include "backends/gemm/cutlass/compile.hpp"
#include "backends/gemm/cutlass/space.hpp"
#include "gemmforge/backend.hpp"
#include "gemmforge/error.hpp"

using namespace gf;
using namespace gf::cutlass_backend;

namespace {

std::set<std::string> unit_names(const std::vector<CutlassConfig>& configs) {
  std::set<std::string> out;
  for (const auto& c : configs) out.insert(c.unit.name());
  return out;
}

}  // namespace

TEST(CutlassSpace, LevelsTakeWholeUnitsOfTheCatalogue) {
  const DeviceInfo d = DeviceInfo::assumed_hopper();
  const GemmProblem p = GemmProblem::parse("4096x4096x4096:bf16");
  const auto fast = ranked_configs(p, d, Search::fast);
  const auto normal = ranked_configs(p, d, Search::normal);
  const auto all = ranked_configs(p, d, Search::exhaustive);
  // Tile orders are run-time choices of the same kernels: fast takes CUTLASS's default, default
  // adds a swizzle of 4, exhaustive every raster and swizzle.
  EXPECT_EQ(fast.size(), 4u);
  EXPECT_EQ(unit_names(fast).size(), 1u) << "--search fast compiles one unit";
  EXPECT_EQ(normal.size(), 8u * 2);
  EXPECT_EQ(unit_names(normal).size(), 2u);
  EXPECT_EQ(all.size(), 16u * 12);
  std::set<std::string> names, schedules;
  for (const auto& c : all) {
    EXPECT_TRUE(names.insert(c.name()).second) << c.name() << " appears twice";
    EXPECT_EQ(illegal_reason(c.tile()), "") << c.name();
    EXPECT_LE(c.unit.tiles.size(), 8u) << "units hold 4-8 instances";
    EXPECT_GE(c.unit.tiles.size(), 4u);
    schedules.insert(std::string(to_string(c.tile().schedule)));
    const CutlassConfig back = CutlassConfig::from_json(c.to_json());
    EXPECT_EQ(back.name(), c.name());
    EXPECT_EQ(back.unit.name(), c.unit.name());
    EXPECT_EQ(back.unit.tiles, c.unit.tiles);
    EXPECT_EQ(back.raster, c.raster);
    EXPECT_EQ(back.swizzle, c.swizzle);
    EXPECT_TRUE(c.name().starts_with(c.kernel_name())) << c.name();
  }
  EXPECT_EQ(schedules, (std::set<std::string>{"coop", "pingpong", "streamk"}));
  for (const auto& c : fast) {
    EXPECT_EQ(c.unit.tier, 0);
    EXPECT_EQ(c.name(), c.kernel_name()) << "the default order adds nothing to the name";
  }
  // A kernel's orders tie in the model: its default comes first.
  EXPECT_EQ(normal[0].kernel_name(), normal[1].kernel_name());
  EXPECT_EQ(normal[0].swizzle, 1);
  EXPECT_EQ(normal[1].name(), normal[1].kernel_name() + "_rh4");
}

TEST(CutlassSpace, ConfigsStoredBeforeTileOrdersStillLoad) {
  const CutlassConfig c = ranked_configs(GemmProblem::parse("4096x4096x4096:bf16:bias"), DeviceInfo::assumed_hopper(),
                                         Search::exhaustive)[5];
  nlohmann::json old = c.to_json();
  old.erase("raster");
  old.erase("swizzle");
  old["kind"]["bias"] = true;  // a bias per column, as a boolean
  const CutlassConfig back = CutlassConfig::from_json(old);
  EXPECT_EQ(back.unit.kind.bias, BiasKind::col);
  EXPECT_EQ(back.name(), c.kernel_name());
  nlohmann::json bad = c.to_json();
  bad["swizzle"] = 3;
  EXPECT_THROW(CutlassConfig::from_json(bad), Error);
  bad["swizzle"] = 2;
  bad["raster"] = "diagonal";
  EXPECT_THROW(CutlassConfig::from_json(bad), Error);
}

TEST(CutlassSpace, KernelsAreShapeIndependent) {
  // Another shape of the same dtype, layout and epilogue lists the same units: nothing compiles.
  const DeviceInfo d = DeviceInfo::assumed_hopper();
  const auto a = ranked_configs(GemmProblem::parse("4096x6144x4096:bf16"), d, Search::normal);
  const auto b = ranked_configs(GemmProblem::parse("16x1024x14336:bf16"), d, Search::normal);
  EXPECT_EQ(unit_names(a), unit_names(b));
  EXPECT_NE(unit_names(a),
            unit_names(ranked_configs(GemmProblem::parse("16x1024x14336:bf16:bias+gelu"), d, Search::normal)));
}

TEST(CutlassSpace, RanksByTheModel) {
  const DeviceInfo d = DeviceInfo::assumed_hopper();
  const TileConfig big = ranked_configs(GemmProblem::parse("8192x8192x8192:bf16"), d, Search::fast).front().tile();
  EXPECT_GE(big.m * big.n, 128 * 128) << big.name();
  // 16 rows: a 128-row tile wastes seven eighths of its work; so few tiles want stream-K or 64 rows.
  const TileConfig small = ranked_configs(GemmProblem::parse("16x4096x4096:bf16"), d, Search::fast).front().tile();
  EXPECT_TRUE(small.m == 64 || small.schedule == Schedule::streamk) << small.name();
  const GemmProblem p = GemmProblem::parse("4096x4096x4096:bf16");
  EXPECT_LT(estimate_us(TileConfig{128, 256, 64, 2, 1, Schedule::cooperative}, p, d),
            estimate_us(TileConfig{64, 128, 64, 1, 1, Schedule::pingpong}, p, d));
}

TEST(CutlassSpace, DeclinesWhatItHasNoKernelFor) {
  EXPECT_EQ(unsupported_reason(GemmProblem::parse("77x1000x1008:bf16")), "");
  EXPECT_EQ(unsupported_reason(GemmProblem::parse("130x384x512:f16:bias+gelu")), "");
  EXPECT_EQ(unsupported_reason(GemmProblem::parse("64x64x64:bf16->f32:nn:residual+silu")), "");
  EXPECT_NE(unsupported_reason(GemmProblem::parse("64x128x64:bf16:swiglu")), "");
  EXPECT_EQ(unsupported_reason(GemmProblem::parse("64x128x64:bf16:rowbias+relu")), "");
  EXPECT_EQ(unsupported_reason(GemmProblem::parse("64x64x64:e4m3->bf16:scale=rowcol+rowbias")), "");
  EXPECT_EQ(unsupported_reason(GemmProblem::parse("64x64x64:e4m3->bf16")), "");
  EXPECT_EQ(unsupported_reason(GemmProblem::parse("77x1000x1024:e4m3xe5m2->f16:scale=tensor+bias+gelu")), "");
  EXPECT_EQ(unsupported_reason(GemmProblem::parse("64x64x64:e4m3->bf16:scale=rowcol+bias+relu")), "");
  EXPECT_EQ(unsupported_reason(GemmProblem::parse("64x64x64:e4m3->bf16:scale=block128+bias+gelu")), "");
  EXPECT_NE(unsupported_reason(GemmProblem::parse("77x1024x1152:e4m3->bf16:scale=block128")), "");  // A's scale rows
  for (const char* spec : {"64x64x64:e4m3->bf16:scale=rowcol+residual", "64x64x64:e4m3->f32", "64x64x64:e4m3->e4m3"})
    EXPECT_NE(unsupported_reason(GemmProblem::parse(spec)), "") << spec;
  EXPECT_NE(unsupported_reason(GemmProblem::parse("64x64x60:bf16")), "") << "K rows of 120 bytes";
  EXPECT_NE(unsupported_reason(GemmProblem::parse("64x60x64:bf16")), "") << "D rows of 120 bytes";
  EXPECT_TRUE(
      ranked_configs(GemmProblem::parse("64x128x64:bf16:swiglu"), DeviceInfo::assumed_hopper(), Search::fast).empty());
  EXPECT_NE(illegal_reason(TileConfig{64, 128, 64, 1, 1, Schedule::cooperative}), "");
  EXPECT_NE(illegal_reason(TileConfig{128, 256, 64, 1, 1, Schedule::pingpong}), "") << "256 accumulators a thread";
  EXPECT_NE(illegal_reason(TileConfig{128, 128, 64, 2, 2, Schedule::pingpong}), "");
  EXPECT_NE(illegal_reason(TileConfig{128, 128, 32, 1, 1, Schedule::pingpong}), "");
  // fp8 K tiles are 128 elements: the same 128-byte rows.
  EXPECT_EQ(illegal_reason(TileConfig{128, 128, 128, 1, 1, Schedule::pingpong}, DType::e4m3), "");
  EXPECT_NE(illegal_reason(TileConfig{128, 128, 64, 1, 1, Schedule::pingpong}, DType::e4m3), "");
  // Block scales: no stream-K, tiles of whole 128-column blocks; units leave out what they cannot build.
  EXPECT_NE(illegal_reason(TileConfig{128, 128, 128, 1, 1, Schedule::streamk}, DType::e4m3, ScaleKind::block128), "");
  EXPECT_NE(illegal_reason(TileConfig{128, 64, 128, 1, 1, Schedule::pingpong}, DType::e4m3, ScaleKind::block128), "");
  EXPECT_NE(illegal_reason(TileConfig{128, 256, 128, 2, 1, Schedule::cooperative}, DType::e4m3, ScaleKind::block128),
            "");
  EXPECT_EQ(illegal_reason(TileConfig{256, 128, 128, 1, 2, Schedule::cooperative}, DType::e4m3, ScaleKind::block128),
            "");
  for (const Unit& u :
       units_for(UnitKind::of(GemmProblem::parse("64x64x64:e4m3->bf16:scale=block128")), Search::exhaustive))
    for (const TileConfig& t : u.tiles) EXPECT_NE(t.schedule, Schedule::streamk) << u.name();
  for (const auto& c : ranked_configs(GemmProblem::parse("4096x4096x4096:e4m3->bf16:scale=tensor"),
                                      DeviceInfo::assumed_hopper(), Search::exhaustive))
    EXPECT_EQ(c.tile().k, 128) << c.name();
}

TEST(CutlassSpace, UnitKindsNameTheirTemplateArguments) {
  EXPECT_EQ(UnitKind::of(GemmProblem::parse("64x64x64:bf16")).name(), "bf16_bf16_tn");
  EXPECT_EQ(UnitKind::of(GemmProblem::parse("64x64x64:f16->f32:nn:residual+bias+gelu_tanh")).name(),
            "f16_f32_nn_c_bias_gelu_tanh");
  // alpha and beta are run-time arguments: only whether C is read shapes the kernel.
  EXPECT_EQ(UnitKind::of(GemmProblem::parse("64x64x64:bf16:alpha=0.5+beta=2")),
            UnitKind::of(GemmProblem::parse("64x64x64:bf16:residual")));
  const UnitKind k = UnitKind::of(GemmProblem::parse("64x64x64:f16->f32:nn:residual+bias+silu"));
  EXPECT_EQ(UnitKind::from_json(k.to_json()), k);
  EXPECT_THROW(CutlassConfig::from_json({{"kind", k.to_json()}}), Error);
  const UnitKind f = UnitKind::of(GemmProblem::parse("64x64x64:e4m3xe5m2->f16:scale=tensor+bias"));
  EXPECT_EQ(f.name(), "e4m3xe5m2_f16_tn_bias_scaled");
  EXPECT_EQ(UnitKind::from_json(f.to_json()), f);
  const UnitKind r = UnitKind::of(GemmProblem::parse("64x64x64:e4m3->bf16:scale=rowcol"));
  EXPECT_EQ(r.name(), "e4m3_bf16_tn_rowwise");
  EXPECT_EQ(UnitKind::from_json(r.to_json()), r);
  const UnitKind row = UnitKind::of(GemmProblem::parse("64x64x64:bf16:rowbias+relu"));
  EXPECT_EQ(row.name(), "bf16_bf16_tn_rowbias_relu");
  EXPECT_EQ(UnitKind::from_json(row.to_json()), row);
}

TEST(CutlassCodegen, TheUnitSourceInstantiatesEachKernel) {
  const GemmProblem p = GemmProblem::parse("130x384x512:bf16:bias+gelu_tanh");
  const Unit u = units_for(UnitKind::of(p), Search::fast).front();
  const std::string src = unit_source(u);
  EXPECT_NE(src.find("#include \"gemm/cutlass/unit.cuh\""), std::string::npos);
  EXPECT_NE(src.find("#include \"gemm/cutlass/entry_points.cuh\""), std::string::npos);
  EXPECT_NE(src.find("using GfUnit = gf_cutlass::Unit<I0, I1, I2, I3>;"), std::string::npos) << src;
  EXPECT_NE(
      src.find("gf_cutlass::Instance<128, 256, 64, 2, 1, gf_cutlass::Cooperative, cutlass::bfloat16_t, "
               "cutlass::bfloat16_t, cutlass::layout::ColumnMajor, cutlass::bfloat16_t, void, gf_cutlass::kColBias, "
               "gf_cutlass::kNoScale, "
               "cutlass::epilogue::thread::GELU_taylor>"),
      std::string::npos)
      << src;
  EXPECT_NE(src.find("gf_cutlass::StreamK"), std::string::npos);
  for (size_t i = 0; i < u.tiles.size(); ++i) EXPECT_NE(src.find("\"" + u.instance_name(i) + "\""), std::string::npos);
  // NN reads a row-major B; a residual reads C of D's type.
  const std::string nn =
      unit_source(units_for(UnitKind::of(GemmProblem::parse("64x64x64:f16->f32:nn:residual")), Search::fast).front());
  EXPECT_NE(
      nn.find("cutlass::half_t, cutlass::layout::RowMajor, float, float, gf_cutlass::kNoBias, gf_cutlass::kNoScale, "
              "cutlass::epilogue::thread::Identity>"),
      std::string::npos)
      << nn;
  // fp8 with per-tensor scales: K tiles of 128, the scaled fusion.
  const std::string fp8 = unit_source(
      units_for(UnitKind::of(GemmProblem::parse("64x64x64:e4m3->bf16:scale=tensor")), Search::fast).front());
  EXPECT_NE(
      fp8.find("gf_cutlass::Instance<128, 256, 128, 2, 1, gf_cutlass::Cooperative, cutlass::float_e4m3_t, "
               "cutlass::float_e4m3_t, cutlass::layout::ColumnMajor, cutlass::bfloat16_t, void, gf_cutlass::kNoBias, "
               "gf_cutlass::kTensorScale, "),
      std::string::npos)
      << fp8;
  const std::string row =
      unit_source(units_for(UnitKind::of(GemmProblem::parse("64x64x64:bf16:rowbias+relu")), Search::fast).front());
  EXPECT_NE(row.find("void, gf_cutlass::kRowBias, gf_cutlass::kNoScale, cutlass::epilogue::thread::ReLu>"),
            std::string::npos)
      << row;
}

TEST(CutlassCompile, CacheKeysNameTheUnitAndItsContent) {
  const Unit a = units_for(UnitKind::of(GemmProblem::parse("64x64x64:bf16")), Search::normal)[0];
  const Unit b = units_for(UnitKind::of(GemmProblem::parse("64x64x64:bf16")), Search::normal)[1];
  const Unit c = units_for(UnitKind::of(GemmProblem::parse("64x64x64:bf16:relu")), Search::fast)[0];
  EXPECT_EQ(cache_key(a), cache_key(a));
  EXPECT_TRUE(cache_key(a).starts_with(a.name() + "-")) << cache_key(a);
  EXPECT_NE(cache_key(a), cache_key(b));
  EXPECT_NE(cache_key(a), cache_key(c));
  Unit reordered = a;
  std::swap(reordered.tiles[0], reordered.tiles[1]);
  EXPECT_NE(cache_key(a), cache_key(reordered)) << "the instances' order is their index in the unit";
  // The flags are part of the key: a unit built otherwise is another entry.
  const auto& flags = toolchain().flags;
  EXPECT_NE(std::find(flags.begin(), flags.end(), "-arch=sm_90a"), flags.end());
  EXPECT_NE(std::find(flags.begin(), flags.end(), "shared"), flags.end()) << "--cudart shared";
}

#pragma once
// The CUTLASS backend's search space: SM90 CollectiveBuilder kernels (tile, cluster, schedule)
// in fixed units that nvcc compiles together, their legality, and a cost model to rank them.
// Plain data and arithmetic: no CUDA calls, so all of it is tested on the CPU.
//
// A kernel is independent of M, N and K (they are run-time arguments), so it is identified by
// what its template fixes: the unit's kind (dtypes, layout, epilogue) and the instance's tile.
// A search level takes whole units from a fixed catalogue, so a later problem of the same kind
// finds every kernel it needs already compiled.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gemmforge/backend.hpp"

namespace gf::cutlass_backend {

// The nvidia-cutlass release whose headers the units are built from (scripts/setup.sh pins it);
// part of every cache key and of the backend's version.
inline constexpr std::string_view kCutlassVersion = "4.2.0";

enum class Schedule { cooperative, pingpong, streamk };
std::string_view to_string(Schedule s);
Schedule parse_schedule(std::string_view s);  // throws gf::Error

// What every instance of a unit shares: the template arguments a problem fixes.
struct UnitKind {
  DType in = DType::bf16, in_b = DType::bf16, out = DType::bf16;  // A's, B's and D's dtypes
  Layout layout = Layout::tn;
  bool c = false;                  // reads C (beta != 0)
  BiasKind bias = BiasKind::none;  // adds a bias per column (N) or per row (M)
  Activation act = Activation::none;
  ScaleKind scale = ScaleKind::none;  // fp8: per tensor (alpha times scale_a * scale_b) or rowcol

  static UnitKind of(const GemmProblem& p);
  // "bf16_bf16_tn" ("e4m3xe5m2_bf16_tn" for two input dtypes), then "_c", "_bias" or "_rowbias", "_<act>",
  // "_scaled" (per-tensor scales), "_rowwise" or "_block128" as they apply.
  std::string name() const;
  nlohmann::json to_json() const;
  static UnitKind from_json(const nlohmann::json& j);
  bool operator==(const UnitKind&) const = default;
};

// One kernel's own parameters within its unit. The mainloop's stages are CUTLASS's
// StageCountAutoCarveout: as many as fit beside the epilogue's shared memory.
struct TileConfig {
  int m = 128, n = 128, k = 64;
  int cluster_m = 1, cluster_n = 1;
  Schedule schedule = Schedule::cooperative;

  // "128x256x64_c2x1_coop"
  std::string name() const;
  nlohmann::json to_json() const;
  static TileConfig from_json(const nlohmann::json& j);
  bool operator==(const TileConfig&) const = default;
};

// A unit: the instances one shared object holds, compiled by one nvcc run.
struct Unit {
  UnitKind kind;
  int tier = 0;  // its place in the catalogue: tier 0 is what --search fast compiles
  std::vector<TileConfig> tiles;

  // "cutlass90_bf16_bf16_tn_bias_gelu_t0": unique per kind and tier.
  std::string name() const;
  // An instance's name: the unit's kind, then the tile ("cutlass90_bf16_bf16_tn_128x256x64_c2x1_coop").
  std::string instance_name(size_t i) const;
};

// The persistent tile scheduler's order over the output tiles: CUTLASS's heuristic, along M or
// along N. A run-time argument of the same compiled kernel, as is the swizzle.
enum class Raster { heuristic, along_m, along_n };  // the values of abi.h's raster

// A candidate's config: its unit (whole, so that a stored decision builds exactly the unit it was
// measured from), its index there, and the tile order it runs with (swizzle: 1, 2, 4 or 8 tiles a
// raster group; more tiles of a group share operands in L2).
struct CutlassConfig {
  Unit unit;
  int index = 0;
  Raster raster = Raster::heuristic;
  int swizzle = 1;

  const TileConfig& tile() const { return unit.tiles.at(size_t(index)); }
  // The compiled kernel's name in its unit.
  std::string kernel_name() const { return unit.instance_name(size_t(index)); }
  // The kernel's name, then "_r" with the raster (h, m, n) and swizzle where they are not the
  // default ("..._128x128x64_c2x1_pingpong_rm4").
  std::string name() const;
  nlohmann::json to_json() const;
  static CutlassConfig from_json(const nlohmann::json& j);  // throws gf::Error on a malformed config
};

// Why the CUTLASS kernels cannot run a problem at all, or "".
std::string unsupported_reason(const GemmProblem& p);
// Why this tile cannot be built (CollectiveBuilder's constraints) for inputs of this dtype and
// scale kind, or "".
std::string illegal_reason(const TileConfig& t, DType in = DType::bf16, ScaleKind scale = ScaleKind::none);
// The catalogue's units of a kind up to and including a tier (fast: tier 0; default: 0-1;
// exhaustive: all).
std::vector<Unit> units_for(const UnitKind& kind, Search level);
// Modelled run time in microseconds, to rank candidates before anything is compiled.
double estimate_us(const TileConfig& t, const GemmProblem& p, const DeviceInfo& d);
// The candidates of the level's units, best estimate first.
std::vector<CutlassConfig> ranked_configs(const GemmProblem& p, const DeviceInfo& d, Search level);

}  // namespace gf::cutlass_backend

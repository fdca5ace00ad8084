// One real CUTLASS unit through nvcc, on the CPU: compiled into the kernel cache, served from it
// the second time, dlopened, and asked can_implement. A unit of one kernel (~35-80 CPU-seconds);
// its own binary and ctest entry (label nvcc), so the unit tests and the sanitizers stay quick.
// Skipped, saying why, where nvcc or the CUTLASS headers are missing.
#include <gtest/gtest.h>

#include "backends/gemm/cutlass/compile.hpp"
#include "backends/gemm/cutlass/kernel.hpp"
#include "backends/gemm/cutlass/space.hpp"

using namespace gf;
using namespace gf::cutlass_backend;

TEST(CutlassNvcc, CompilesCachesAndLoadsAUnit) {
  const Toolchain& t = toolchain();
  if (!t.nvcc_error.empty() || !t.headers_error.empty())
    GTEST_SKIP() << t.nvcc_error << (t.nvcc_error.empty() ? "" : "; ") << t.headers_error;
  const GemmProblem p = GemmProblem::parse("77x1000x1008:bf16:bias+gelu");
  // A unit of one kernel (tier 9 names it apart from the catalogue's units).
  const Unit unit{UnitKind::of(p), 9, {TileConfig{128, 128, 64, 1, 1, Schedule::pingpong}}};
  const CompiledUnit first = compile_unit(unit, /*use_cache=*/true);
  ASSERT_TRUE(first.report.ok) << first.report.log;
  const CompiledUnit again = compile_unit(unit, /*use_cache=*/true);
  ASSERT_TRUE(again.report.ok);
  EXPECT_TRUE(again.report.cached) << "the second compile comes from the kernel cache";
  EXPECT_LT(again.report.seconds, 5.0);
  if (!first.report.cached) {
    // Past the cache (--no-cache), a unit this process compiled is not compiled again: the other
    // candidates of a unit take its one nvcc run.
    const CompiledUnit uncached = compile_unit(unit, /*use_cache=*/false);
    EXPECT_TRUE(uncached.report.ok && uncached.report.cached) << "a unit compiles once per process";
  }
  EXPECT_EQ(unit_instances(again.library), std::vector<std::string>{unit.instance_name(0)});
  const CutlassConfig c{unit, 0};
  EXPECT_EQ(refusal(c, p, again.library), "");
  // N = 1004 leaves D's rows 8-byte aligned: CUTLASS's own check refuses it, with a reason.
  const std::string why = refusal(c, GemmProblem::parse("77x1004x1008:bf16:bias+gelu"), again.library);
  EXPECT_NE(why.find("can_implement"), std::string::npos) << why;
}

#include "harness/bench.hpp"

#include "harness/gemm_bench.hpp"
#include "harness/rowop_bench.hpp"

namespace gf::harness {

std::unique_ptr<Bench> make_bench(std::string_view family, const std::string& key, const DeviceInfo& device,
                                  uint64_t seed) {
  if (family == GemmProblem::kFamily) return std::make_unique<GemmBench>(GemmProblem::parse(key), device, seed);
  if (family == RowOpSpec::kFamily) return std::make_unique<RowOpBench>(RowOpSpec::parse(key), device, seed);
  GF_FAIL("unknown kernel family '{}' (gemm, rowop)", family);
}

}  // namespace gf::harness

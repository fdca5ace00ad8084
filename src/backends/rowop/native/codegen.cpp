#include "backends/rowop/native/codegen.hpp"

#include <fmt/format.h>

namespace gf::rowops {

std::string row_source(const RowConfig& c, const RowOpSpec& s) {
  return fmt::format(R"(// {name}
#include "rowops/row_op.cuh"

struct Cfg {{
  static constexpr gf::RowOpKind kOp = gf::RowOpKind::{op};
  static constexpr gf::DType kIn = gf::DType::{in}, kOut = gf::DType::{out};
  static constexpr int kCols = {cols}, kVec = {vec}, kThreads = {threads}, kRowsPerCta = {rows}, kCluster = {cluster};
  static constexpr bool kResidual = {residual}, kValidLen = {valid}, kStream = {stream}, kBulk = {bulk};
  static constexpr int kStages = {stages};
  static constexpr bool kPairMax = {pair_max};
}};

extern "C" __global__ void __launch_bounds__({threads}) gf_row_op(const __grid_constant__ gf::RowParams p) {{
  gf::RowOp<Cfg>::run(p);
}}
)",
                     fmt::arg("name", c.name(s)), fmt::arg("op", to_string(s.kind)), fmt::arg("in", to_string(s.in)),
                     fmt::arg("out", to_string(s.out)), fmt::arg("cols", s.cols), fmt::arg("vec", c.vec),
                     fmt::arg("threads", c.threads), fmt::arg("rows", c.rows_per_cta), fmt::arg("cluster", c.cluster),
                     fmt::arg("residual", s.residual), fmt::arg("valid", s.valid_len), fmt::arg("stream", c.stream),
                     fmt::arg("bulk", c.bulk), fmt::arg("stages", c.stages), fmt::arg("pair_max", c.pair_max));
}

}  // namespace gf::rowops

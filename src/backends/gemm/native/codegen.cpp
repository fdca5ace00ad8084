#include "backends/gemm/native/codegen.hpp"

#include <fmt/format.h>

#include <cctype>

namespace gf::native {

std::string instantiation_source(const NativeConfig& c, const GemmProblem& problem) {
  const GemmProblem p = kernel_problem(c, problem);  // swap-AB: the kernel's own, transposed
  const Epilogue& e = p.epilogue;
  return fmt::format(
      R"(#include "gemm/sm90/gemm.cuh"

struct Cfg {{
  static constexpr int kBlockM = {bm}, kBlockN = {bn}, kStages = {stages}, kConsumers = {consumers};
  static constexpr int kSplitK = {split}, kGroup = {group}, kCluster = {cluster};
  static constexpr bool kPingpong = {pingpong}, kClusterAlongM = {cluster_m}, kRasterN = {raster_n};
  static constexpr bool kNN = {nn}, kHasC = {has_c};
  static constexpr int kStoreBoxes = {store_boxes};
  static constexpr gf::DType kIn = gf::DType::{in}, kInB = gf::DType::{in_b}, kOut = gf::DType::{out};
  static constexpr gf::Activation kAct = gf::Activation::{act};
  static constexpr gf::BiasKind kBias = gf::BiasKind::{bias};
  static constexpr gf::GateKind kGate = gf::GateKind::{gate};
  static constexpr gf::ScaleKind kScale = gf::ScaleKind::{scale};
  static constexpr bool kPromote = {promote}, kPromoteAhead = {promote_ahead}, kPromoteHalves = {halves};
  static constexpr bool kSwapAB = {swap};
}};

extern "C" __global__ void __launch_bounds__({threads}, 1) {symbol}(const __grid_constant__ gf::GemmParams p) {{
  gf::Gemm<Cfg>::run(p);
}}
)",
      fmt::arg("bm", c.bm), fmt::arg("bn", c.bn), fmt::arg("stages", c.stages), fmt::arg("consumers", c.consumers),
      fmt::arg("split", c.split_k), fmt::arg("group", c.group), fmt::arg("cluster", c.cluster),
      fmt::arg("cluster_m", c.cluster_m), fmt::arg("store_boxes", c.store_boxes), fmt::arg("pingpong", c.pingpong),
      fmt::arg("raster_n", c.raster_n), fmt::arg("nn", p.layout == Layout::nn), fmt::arg("has_c", e.has_c()),
      fmt::arg("in", to_string(p.a)), fmt::arg("in_b", to_string(p.b)), fmt::arg("out", to_string(p.out)),
      fmt::arg("act", to_string(e.act)), fmt::arg("bias", to_string(e.bias)), fmt::arg("gate", to_string(e.gate)),
      fmt::arg("scale", to_string(e.scale)), fmt::arg("promote", c.promote), fmt::arg("promote_ahead", c.promote_ahead),
      fmt::arg("halves", c.halves), fmt::arg("threads", c.threads()), fmt::arg("swap", c.swap_ab),
      fmt::arg("symbol", kernel_symbol(c, problem)));
}

std::string kernel_symbol(const NativeConfig& c, const GemmProblem& p) {
  std::string s = c.name(p);
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

}  // namespace gf::native

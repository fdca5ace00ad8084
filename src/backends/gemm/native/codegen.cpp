#include "backends/gemm/native/codegen.hpp"

#include <fmt/format.h>

#include <cctype>

namespace gf::native {
namespace {

const char* out_enum(DType t) { return t == DType::f32 ? "kOutF32" : t == DType::f16 ? "kOutF16" : "kOutBf16"; }

const char* act_enum(Activation a) {
  switch (a) {
    case Activation::relu:
      return "kActRelu";
    case Activation::gelu_erf:
      return "kActGeluErf";
    case Activation::gelu_tanh:
      return "kActGeluTanh";
    case Activation::silu:
      return "kActSilu";
    default:
      return "kActNone";
  }
}

}  // namespace

std::string instantiation_source(const NativeConfig& c, const GemmProblem& p) {
  const Epilogue& e = p.epilogue;
  const char* bias = e.bias == BiasKind::per_col ? "kBiasCol" : e.bias == BiasKind::per_row ? "kBiasRow" : "kBiasNone";
  const char* gate = e.gate == GateKind::interleaved ? "kGateInterleaved"
                     : e.gate == GateKind::split     ? "kGateSplit"
                                                     : "kGateNone";
  return fmt::format(R"(#include "gemm/sm90/gemm.cuh"

struct Cfg {{
  static constexpr int kBlockM = {bm}, kBlockN = {bn}, kStages = {stages}, kConsumers = {consumers};
  static constexpr int kSplitK = {split}, kGroup = {group}, kCluster = {cluster};
  static constexpr bool kPingpong = {pingpong}, kClusterAlongM = {cluster_m}, kRasterN = {raster_n};
  static constexpr bool kNN = {nn}, kF16 = {f16}, kHasC = {has_c};
  static constexpr int kStoreBoxes = {store_boxes};
  static constexpr int kOut = gf::{out}, kAct = gf::{act}, kBias = gf::{bias}, kGate = gf::{gate};
}};

extern "C" __global__ void __launch_bounds__({threads}, 1) {symbol}(const __grid_constant__ gf::GemmParams p) {{
  gf::Gemm<Cfg>::run(p);
}}
)",
                     fmt::arg("bm", c.bm), fmt::arg("bn", c.bn), fmt::arg("stages", c.stages),
                     fmt::arg("consumers", c.consumers), fmt::arg("split", c.split_k), fmt::arg("group", c.group),
                     fmt::arg("cluster", c.cluster), fmt::arg("cluster_m", c.cluster_m),
                     fmt::arg("store_boxes", c.store_boxes), fmt::arg("pingpong", c.pingpong),
                     fmt::arg("raster_n", c.raster_n), fmt::arg("nn", p.layout == Layout::nn),
                     fmt::arg("f16", p.a == DType::f16), fmt::arg("has_c", e.has_c()), fmt::arg("out", out_enum(p.out)),
                     fmt::arg("act", act_enum(e.act)), fmt::arg("bias", bias), fmt::arg("gate", gate),
                     fmt::arg("threads", c.threads()), fmt::arg("symbol", kernel_symbol(c, p)));
}

std::string kernel_symbol(const NativeConfig& c, const GemmProblem& p) {
  std::string s = c.name(p);
  for (char& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

}  // namespace gf::native

#include "backends/rowop/native/kernel.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "backends/rowop/native/codegen.hpp"
#include "gemmforge/error.hpp"
#include "rowops/params.h"

namespace gf::rowops {
namespace {}  // namespace

jit::Compiled compile_row_kernel(const RowOpSpec& s, const RowConfig& c, bool use_cache) {
  return jit::compile(c.name(s), row_source(c, s), use_cache);
}

std::unique_ptr<RowKernel> load_row_kernel(const RowOpSpec& s, const RowConfig& c) {
  jit::Compiled compiled = compile_row_kernel(s, c, /*use_cache=*/true);
  GF_CHECK(compiled.report.ok, "{} failed to compile:\n{}", c.name(s), compiled.report.log);
  return std::make_unique<RowKernel>(s, c, compiled.cubin);
}

void check_args(const RowOpSpec& s, const RowOpArgs& a) {
  GF_CHECK(a.x && a.y, "{}: x and y must be non-null", s.key());
  if (s.kind != RowOpKind::softmax) GF_CHECK(a.weight, "{}: the norm needs a weight", s.key());
  if (s.kind == RowOpKind::layernorm) GF_CHECK(a.bias, "{}: layernorm needs a bias", s.key());
  if (s.residual) GF_CHECK(a.residual && a.residual_out, "{}: needs residual and residual_out", s.key());
  if (s.valid_len) GF_CHECK(a.valid_len, "{}: needs valid_len", s.key());
}

std::string misaligned(const RowOpSpec& s, const RowConfig& c, const RowOpArgs& a) {
  auto check = [&](const void* p, int elem_bytes, const char* what) -> std::string {
    // Bulk copies need 16-byte aligned sources.
    size_t need = size_t(c.bulk ? 16 : std::min(16, c.vec * elem_bytes));
    if (p && reinterpret_cast<uintptr_t>(p) % need != 0)
      return fmt::format("{} is not {}-byte aligned (vector width {})", what, need, c.vec);
    return "";
  };
  const int in = dtype_bytes(s.in), out = dtype_bytes(s.out);
  for (auto why : {check(a.x, in, "x"), check(a.y, out, "y"), check(a.weight, in, "weight"), check(a.bias, in, "bias"),
                   check(a.residual, in, "residual"), check(a.residual_out, in, "residual_out")})
    if (!why.empty()) return why;
  return "";
}

RowConfig config_for_pointers(const RowOpSpec& s, const RowConfig& c, const RowOpArgs& a) {
  if (misaligned(s, c, a).empty()) return c;
  for (const auto& alt : row_configs(s, true))
    if (misaligned(s, alt, a).empty()) return alt;
  GF_FAIL("{}: the pointers suit no config ({})", s.key(), misaligned(s, c, a));
}

RowKernel::RowKernel(const RowOpSpec& spec, const RowConfig& config, const std::string& cubin)
    : spec_(spec), config_(config), module_(cubin), fn_(module_.function("gf_row_op")) {
  if (config.smem_bytes(spec) > 0) cuda::set_max_dynamic_smem(fn_, unsigned(config.smem_bytes(spec)));
  if (config.cluster > 8) cuda::allow_large_clusters(fn_);
  const int64_t clusters = (spec.rows + config.rows_per_cta - 1) / config.rows_per_cta;
  // A cluster that cannot be resident would fail at launch with the driver's bare error.
  const int resident =
      config.cluster > 1 || config.bulk ? cuda::max_active_clusters(fn_, launch_config(config.cluster)) : 1;
  GF_CHECK(resident > 0, "{}: no cluster of {} CTAs ({} threads, {} bytes of shared memory each) can be resident",
           config.name(spec), config.cluster, config.threads, config.smem_bytes(spec));
  if (config.bulk) {
    // Persistent: as many clusters as are resident at once, each looping over rows.
    grid_ = std::min<int64_t>(clusters, resident) * config.cluster;
  } else {
    grid_ = clusters * config.cluster;
  }
  GF_CHECK(grid_ < (int64_t(1) << 31), "{}: too many rows for one launch", spec.key());
  if (config.bulk) {
    // A bulk kernel's row copies hold their lines last in L2 (evict_last), and lines of one
    // priority leave oldest first: once twice the L2's size has been read after a row, that row's
    // lines are gone. Only the rows read later can outlive the kernel there, so only they hand
    // their lines back to normal priority, at a fraction of the cost of every row doing so.
    const int64_t row_bytes = spec.cols * dtype_bytes(spec.in) * (spec.residual ? 2 : 1);
    hand_back_from_ = std::max<int64_t>(0, spec.rows - (2 * cuda::l2_bytes() + row_bytes - 1) / row_bytes);
  }
}

cuda::LaunchConfig RowKernel::launch_config(int64_t ctas) const {
  return {.grid = {unsigned(ctas), 1, 1},
          .block = {unsigned(config_.threads), 1, 1},
          .smem_bytes = unsigned(config_.smem_bytes(spec_)),
          .cluster = {unsigned(config_.cluster), 1, 1}};
}

void RowKernel::launch(const RowOpArgs& a, cudaStream_t stream) {
  check_args(spec_, a);
  std::string why = misaligned(spec_, config_, a);
  GF_CHECK(why.empty(), "{}: {}", spec_.key(), why);
  RowParams p{.x = a.x,
              .y = a.y,
              .weight = a.weight,
              .bias = a.bias,
              .residual = a.residual,
              .residual_out = a.residual_out,
              .valid_len = a.valid_len,
              .rows = spec_.rows,
              .hand_back_from = hand_back_from_,
              .scale = a.scale,
              .eps = a.eps};
  void* args[] = {&p};
  cuda::launch(fn_, launch_config(grid_), args, stream);
}

}  // namespace gf::rowops

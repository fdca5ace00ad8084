// The CuTe DSL row-op backend: gemmforge's CuTe DSL softmax and RMSNorm (python/gemmforge_cute/
// rowops.py) compiled by Python workers into one shared object per config and op (the DSL's host
// launcher behind a fixed C ABI, build_rowop.py), loaded and launched from C++. Machines without
// the DSL run from the kernel cache and name a miss.
#include <fmt/format.h>

#include "backends/registry.hpp"
#include "backends/rowop/cute/space.hpp"
#include "core/hash.hpp"
#include "gemmforge/error.hpp"
#include "jit/cute_dsl.hpp"

namespace gf::cute_rowops {
namespace {

constexpr int kAbi = 1;  // of the shim in python/gemmforge_cute/build_rowop.py

// The shim's argument block (build_rowop.py, gf_cute_rowop_args).
struct ShimArgs {
  const void* x;
  void* y;
  const void* weight;
  const void* residual;
  void* residual_out;
  const int32_t* valid_len;
  int64_t rows, cols, ld, weight_len, valid_len_len;
  float scale, eps;
};
using LaunchFn = int (*)(const ShimArgs*, cudaStream_t);

std::string version_string() {
  static const std::string v = jit::cute_dsl::version_string(
      {"gemmforge_cute/build_rowop.py", "gemmforge_cute/rowop_config.py", "gemmforge_cute/rowops.py"});
  return v;
}

jit::PythonArtifact compile_config(const CuteRowConfig& c, const RowOpSpec& s, bool use_cache) {
  const nlohmann::json req = compile_request(c, s);
  const std::string key =
      fmt::format("cute_{}_{}-{}", to_string(s.kind), c.name(), hex64(fnv1a(req.dump() + version_string())));
  return jit::cute_dsl::compile(req, key, fmt::format("{} for {}", c.name(), s.key()), use_cache);
}

class CuteRowKernel final : public RowOpKernel {
 public:
  CuteRowKernel(const CuteRowConfig& c, const RowOpSpec& s, const std::string& so)
      : cfg_(c), spec_(s), so_(so, kAbi, "row op " + c.name()), launch_(so_.entry<LaunchFn>("gf_cute_rowop")) {}

  size_t alignment() const override { return 16; }  // 16-byte vectors: the kernel was compiled for it

  void launch(const RowOpArgs& a, cudaStream_t stream) override {
    const RowOpSpec& s = spec_;
    GF_CHECK(a.x && a.y, "cute {}: x and y must be non-null", s.key());
    GF_CHECK(s.kind != RowOpKind::rmsnorm || a.weight, "cute {}: RMSNorm needs its weight", s.key());
    GF_CHECK(!s.residual || (a.residual && a.residual_out), "cute {}: the residual needs residual and residual_out",
             s.key());
    GF_CHECK(!s.valid_len || a.valid_len, "cute {}: valid lengths are missing", s.key());
    // Operands the op does not use still cross as well-formed tensors: x and y stand in.
    const ShimArgs x{.x = a.x,
                     .y = a.y,
                     .weight = a.weight ? a.weight : a.x,
                     .residual = s.residual ? a.residual : a.x,
                     .residual_out = s.residual ? a.residual_out : a.y,
                     .valid_len = s.valid_len ? a.valid_len : static_cast<const int32_t*>(a.x),
                     .rows = s.rows,
                     .cols = s.cols,
                     .ld = s.cols,
                     .weight_len = a.weight ? s.cols : 1,
                     .valid_len_len = s.valid_len ? s.rows : 1,
                     .scale = a.scale,
                     .eps = a.eps};
    const int status = launch_(&x, stream);
    GF_CHECK(status == 0, "cute {} {}: the launch failed (error {})", cfg_.name(), s.key(), status);
  }

 private:
  CuteRowConfig cfg_;
  RowOpSpec spec_;
  jit::cute_dsl::LoadedKernel so_;
  LaunchFn launch_;
};

class CuteRowBackend final : public RowOpBackend {
 public:
  std::string name() const override { return "cute"; }
  std::string version() const override { return version_string(); }
  std::string supports(const RowOpSpec& s) const override { return unsupported_reason(s); }
  std::string doctor_note() const override { return jit::cute_dsl::doctor_note(); }

  std::vector<Candidate> candidates(const RowOpSpec& s, const DeviceInfo&, const SearchOptions& search) const override {
    std::vector<Candidate> out;
    for (const auto& c : ranked_configs(s, search.level)) out.push_back({name(), c.name(), c.to_json()});
    if (search.top_k > 0 && out.size() > size_t(search.top_k)) out.resize(size_t(search.top_k));
    return out;
  }

  CompileReport compile(const RowOpSpec& s, const Candidate& c, bool use_cache) const override {
    return compile_config(CuteRowConfig::from_json(c.config), s, use_cache).report;
  }

  std::unique_ptr<RowOpKernel> build(const RowOpSpec& s, const Candidate& c) const override {
    const CuteRowConfig cfg = CuteRowConfig::from_json(c.config);
    jit::PythonArtifact compiled = compile_config(cfg, s, /*use_cache=*/true);
    GF_CHECK(compiled.report.ok, "cute {} failed to compile:\n{}", c.name, compiled.report.log);
    return std::make_unique<CuteRowKernel>(cfg, s, compiled.bytes);
  }
};

}  // namespace

std::shared_ptr<RowOpBackend> make_backend() { return std::make_shared<CuteRowBackend>(); }

}  // namespace gf::cute_rowops

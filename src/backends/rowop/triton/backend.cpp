// The Triton row-op backend: gemmforge's Triton softmax and RMSNorm (python/gemmforge_triton/
// rowops.py) compiled by Python workers to sm_90 cubins, loaded and launched from C++
// (jit/triton.hpp), so the tuner weighs them beside the native and CuTe DSL row ops.
#include <fmt/format.h>

#include "backends/registry.hpp"
#include "backends/rowop/triton/space.hpp"
#include "core/hash.hpp"
#include "gemmforge/error.hpp"
#include "jit/triton.hpp"

namespace gf::triton_rowops {
namespace {

// The launcher below passes exactly these, in this order (then Triton's scratch pointers).
const std::vector<std::string> kAbiArgs = {"x",         "y",    "weight", "residual", "residual_out",
                                           "valid_len", "ROWS", "COLS",   "scale",    "eps"};

jit::PythonArtifact compile_config(const TritonRowConfig& c, const RowOpSpec& s, const std::string& version,
                                   bool use_cache) {
  static const std::string sources = jit::triton::sources_hash({"gemmforge_triton/rowops.py"});
  nlohmann::json req = compile_request(c, s);
  const std::string key =
      fmt::format("triton_{}_{}-{}", to_string(s.kind), c.name(), hex64(fnv1a(req.dump() + version, fnv1a(sources))));
  req["fresh"] = !use_cache;  // nor from Triton's own cache
  return jit::triton::compile(req, key, version, use_cache);
}

class TritonRowKernel final : public RowOpKernel {
 public:
  TritonRowKernel(const TritonRowConfig& c, const RowOpSpec& s, const jit::PythonArtifact& compiled,
                  const std::string& version)
      : spec_(s), kernel_(compiled, kAbiArgs, version, c.name()), programs_(unsigned(programs(c, s))) {
    // Row ops take no workspace: a template that wants Triton's scratch cannot run here.
    GF_CHECK(kernel_.global_scratch_bytes(programs_) + kernel_.profile_scratch_bytes(programs_) == 0,
             "Triton row op {} wants scratch memory, which row-op launches do not carry", c.name());
  }

  size_t alignment() const override { return 16; }  // the kernel was specialised for it

  void launch(const RowOpArgs& a, cudaStream_t stream) override {
    const RowOpSpec& s = spec_;
    GF_CHECK(a.x && a.y, "triton {}: x and y must be non-null", s.key());
    GF_CHECK(s.kind != RowOpKind::rmsnorm || a.weight, "triton {}: RMSNorm needs its weight", s.key());
    GF_CHECK(!s.residual || (a.residual && a.residual_out), "triton {}: the residual needs residual and residual_out",
             s.key());
    GF_CHECK(!s.valid_len || a.valid_len, "triton {}: valid lengths are missing", s.key());
    void* x = const_cast<void*>(a.x);
    void* y = a.y;
    void* weight = const_cast<void*>(a.weight);
    void* residual = const_cast<void*>(a.residual);
    void* residual_out = a.residual_out;
    void* valid_len = const_cast<int*>(a.valid_len);
    int rows = int(s.rows), cols = int(s.cols);
    float scale = a.scale, eps = a.eps;
    kernel_.launch(programs_, {&x, &y, &weight, &residual, &residual_out, &valid_len, &rows, &cols, &scale, &eps},
                   nullptr, stream);
  }

 private:
  RowOpSpec spec_;
  jit::triton::LoadedKernel kernel_;
  unsigned programs_;
};

class TritonRowBackend final : public RowOpBackend {
 public:
  std::string name() const override { return "triton"; }
  std::string version() const override {
    const jit::triton::Env& env = jit::triton::env();
    return env.error.empty() ? env.version : "none";
  }
  std::string unavailable() const override { return jit::triton::env().error; }
  std::string supports(const RowOpSpec& s) const override { return unsupported_reason(s); }

  std::vector<Candidate> candidates(const RowOpSpec& s, const DeviceInfo&, const SearchOptions& search) const override {
    GF_CHECK(unavailable().empty(), "{}", unavailable());
    std::vector<Candidate> out;
    for (const auto& c : ranked_configs(s, search.level)) {
      nlohmann::json cfg = c.to_json();
      cfg["triton_version"] = jit::triton::env().version;
      out.push_back({name(), c.name(), cfg});
    }
    if (search.top_k > 0 && out.size() > size_t(search.top_k)) out.resize(size_t(search.top_k));
    return out;
  }

  CompileReport compile(const RowOpSpec& s, const Candidate& c, bool use_cache) const override {
    return compile_config(TritonRowConfig::from_json(c.config), s, c.config.at("triton_version"), use_cache).report;
  }

  std::unique_ptr<RowOpKernel> build(const RowOpSpec& s, const Candidate& c) const override {
    const TritonRowConfig cfg = TritonRowConfig::from_json(c.config);
    const std::string version = c.config.at("triton_version");
    jit::PythonArtifact compiled = compile_config(cfg, s, version, /*use_cache=*/true);
    GF_CHECK(compiled.report.ok, "triton {} failed to compile:\n{}", c.name, compiled.report.log);
    return std::make_unique<TritonRowKernel>(cfg, s, compiled, version);
  }
};

}  // namespace

std::shared_ptr<RowOpBackend> make_backend() { return std::make_shared<TritonRowBackend>(); }

}  // namespace gf::triton_rowops

// The Triton backend: gemmforge's Triton GEMM templates (python/gemmforge_triton/templates.py)
// compiled by Python workers to sm_90 cubins, loaded and launched from C++ (jit/triton.hpp).
#include <fmt/format.h>

#include <algorithm>

#include "backends/gemm/triton/space.hpp"
#include "backends/registry.hpp"
#include "core/hash.hpp"
#include "gemmforge/error.hpp"
#include "jit/triton.hpp"

namespace gf::triton_backend {
namespace {

// The launcher below passes exactly these, in this order (then Triton's scratch pointers).
const std::vector<std::string> kAbiArgs = {"a", "b",        "d",     "c",    "bias",    "M",      "N",
                                           "K", "OUT_COLS", "alpha", "beta", "scale_a", "scale_b"};

jit::PythonArtifact compile_config(const TritonConfig& c, const GemmProblem& p, const std::string& triton_version,
                                   bool use_cache) {
  static const std::string sources = jit::triton::sources_hash({"gemmforge_triton/templates.py"});
  nlohmann::json req = compile_request(c, p);
  const std::string key = "triton_" + c.name() + "-" + hex64(fnv1a(req.dump() + triton_version, fnv1a(sources)));
  req["fresh"] = !use_cache;  // nor from Triton's own cache
  return jit::triton::compile(req, key, triton_version, use_cache);
}

class TritonKernel final : public Kernel {
 public:
  TritonKernel(const TritonConfig& c, const GemmProblem& p, const jit::PythonArtifact& compiled,
               const std::string& version)
      : problem_(p), kernel_(compiled, kAbiArgs, version, c.name()) {
    const int64_t tiles = num_tiles(c, p);
    programs_ = unsigned(c.tmpl == "mm" ? tiles : std::min<int64_t>(tiles, c.num_sms));
  }

  size_t workspace_bytes() const override {
    return kernel_.global_scratch_bytes(programs_) + kernel_.profile_scratch_bytes(programs_);
  }
  size_t alignment() const override { return 16; }  // the kernel was specialised for it

  void launch(const GemmArgs& args, cudaStream_t stream) override {
    const GemmProblem& p = problem_;
    GF_CHECK(pointer_alignment(args) >= alignment(),
             "triton {}: operands must be 16-byte aligned (the kernel was specialised for it)", p.key());
    GF_CHECK(args.a && args.b && args.d, "triton {}: A, B and D must be non-null", p.key());
    GF_CHECK(args.workspace_bytes >= workspace_bytes(), "triton {}: needs {} bytes of workspace, got {}", p.key(),
             workspace_bytes(), args.workspace_bytes);
    void* a = const_cast<void*>(args.a);
    void* b = const_cast<void*>(args.b);
    void* d = args.d;
    void* c = const_cast<void*>(args.c);
    void* bias = const_cast<void*>(args.bias);
    void* scale_a = const_cast<float*>(args.scale_a);
    void* scale_b = const_cast<float*>(args.scale_b);
    GF_CHECK(p.epilogue.scale == ScaleKind::none || (scale_a && scale_b), "triton {}: scale_a and scale_b are needed",
             p.key());
    int m = int(p.m), n = int(p.n), k = int(p.k), out_cols = int(p.out_cols());
    float alpha = p.epilogue.alpha, beta = p.epilogue.beta;
    kernel_.launch(programs_, {&a, &b, &d, &c, &bias, &m, &n, &k, &out_cols, &alpha, &beta, &scale_a, &scale_b},
                   args.workspace, stream);
  }

 private:
  GemmProblem problem_;
  jit::triton::LoadedKernel kernel_;
  unsigned programs_ = 0;
};

class TritonBackend final : public Backend {
 public:
  std::string name() const override { return "triton"; }
  std::string version() const override {
    const jit::triton::Env& env = jit::triton::env();
    return env.error.empty() ? env.version : "none";
  }
  std::string unavailable() const override { return jit::triton::env().error; }
  std::string supports(const GemmProblem& p) const override { return unsupported_reason(p); }

  std::vector<Candidate> candidates(const GemmProblem& p, const DeviceInfo& device,
                                    const SearchOptions& search) const override {
    GF_CHECK(unavailable().empty(), "{}", unavailable());
    std::vector<Candidate> out;
    if (search.alignment < 16) return out;  // every kernel is specialised for 16-byte pointers
    for (const auto& c : ranked_configs(p, device, search.level)) {
      nlohmann::json cfg = c.to_json();
      cfg["triton_version"] = jit::triton::env().version;
      out.push_back({name(), c.name(), cfg});
    }
    GF_CHECK(!out.empty(), "no Triton config fits {}", p.key());
    if (search.top_k > 0 && out.size() > size_t(search.top_k)) out.resize(size_t(search.top_k));
    return out;
  }

  CompileReport compile(const GemmProblem& p, const Candidate& c, bool use_cache) const override {
    return compile_config(TritonConfig::from_json(c.config), p, c.config.at("triton_version"), use_cache).report;
  }

  std::unique_ptr<Kernel> build(const GemmProblem& p, const Candidate& c) const override {
    const TritonConfig cfg = TritonConfig::from_json(c.config);
    const std::string version = c.config.at("triton_version");
    jit::PythonArtifact compiled = compile_config(cfg, p, version, /*use_cache=*/true);
    GF_CHECK(compiled.report.ok, "triton {} failed to compile:\n{}", c.name, compiled.report.log);
    return std::make_unique<TritonKernel>(cfg, p, compiled, version);
  }
};

}  // namespace

std::shared_ptr<Backend> make_backend() { return std::make_shared<TritonBackend>(); }

}  // namespace gf::triton_backend

// The native backend: gemmforge's own Hopper templates (kernels/gemm_sm90.cuh), compiled per
// candidate by NVRTC.
#include "backends/gemm/native/compile.hpp"
#include "backends/gemm/native/kernel.hpp"
#include "backends/gemm/native/space.hpp"
#include "backends/registry.hpp"
#include "core/hash.hpp"
#include "cuda/nvrtc.hpp"
#include "gemmforge/error.hpp"

namespace gf::native {
namespace {

class NativeBackend final : public Backend {
 public:
  std::string name() const override { return "native"; }
  // The kernels' sources are part of the version: a changed template invalidates its decisions.
  std::string version() const override {
    static const std::string v =
        std::string(GF_VERSION) + "+" + hex64(jit::toolchain_hash()).substr(0, 8) + "/nvrtc" + cuda::nvrtc_version();
    return v;
  }
  std::string supports(const GemmProblem& p) const override { return unsupported_reason(p); }

  std::vector<Candidate> candidates(const GemmProblem& p, const DeviceInfo& device,
                                    const SearchOptions& search) const override {
    GF_CHECK(!device.present || device.cc_major == 9, "the native templates need sm_90a (Hopper); this GPU is sm_{}{}",
             device.cc_major, device.cc_minor);
    std::vector<Candidate> out;
    if (search.alignment < 16) return out;  // TMA takes 16-byte aligned operands only
    for (const NativeConfig& c : ranked_configs(p, device, search.level))
      out.push_back({name(), c.name(p), c.to_json()});
    GF_CHECK(!out.empty(), "no native config fits {}", p.key());
    if (search.top_k > 0 && out.size() > size_t(search.top_k)) out.resize(size_t(search.top_k));
    return out;
  }

  CompileReport compile(const GemmProblem& p, const Candidate& c, bool use_cache) const override {
    return compile_candidate(NativeConfig::from_json(c.config), p, use_cache).report;
  }

  std::unique_ptr<Kernel> build(const GemmProblem& p, const Candidate& c) const override {
    NativeConfig cfg = NativeConfig::from_json(c.config);
    Compiled compiled = compile_candidate(cfg, p, /*use_cache=*/true);
    GF_CHECK(compiled.report.ok, "native {} failed to compile:\n{}", c.name, compiled.report.log);
    return load_kernel(cfg, p, compiled.cubin);
  }
};

}  // namespace

std::shared_ptr<Backend> make_backend() { return std::make_shared<NativeBackend>(); }

}  // namespace gf::native

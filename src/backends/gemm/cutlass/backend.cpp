// The CUTLASS backend: CUTLASS 3.x's own SM90 kernels (CollectiveBuilder mainloops and epilogue
// fusions), compiled by nvcc in units of 4-8 kernels into shared objects and dlopened.
#include <filesystem>

#include "backends/gemm/cutlass/compile.hpp"
#include "backends/gemm/cutlass/kernel.hpp"
#include "backends/gemm/cutlass/space.hpp"
#include "backends/registry.hpp"
#include "core/hash.hpp"
#include "gemmforge/error.hpp"
#include "store/kernel_cache.hpp"

namespace gf::cutlass_backend {
namespace {

// Whether the kernel cache holds compiled units (carried from a machine that built them), which
// run without the headers.
bool cache_has_units() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(KernelCache::shared().dir(), ec))
    if (e.path().filename().string().starts_with("cutlass90_") && e.path().extension() == ".json") return true;
  return false;
}

class CutlassBackend final : public Backend {
 public:
  std::string name() const override { return "cutlass"; }
  // The template, CUTLASS's version, nvcc's version and the flags: what shapes every unit.
  std::string version() const override {
    static const std::string v = std::string(GF_VERSION) + "+cutlass" + std::string(kCutlassVersion) + "+" +
                                 hex64(toolchain_hash()).substr(0, 8);
    return v;
  }
  // nvcc is needed for the cache keys (its version) and to compile; the headers only to compile,
  // so a carried cache of units runs where they are missing.
  std::string unavailable() const override {
    static const std::string why = [] {
      const Toolchain& t = toolchain();
      if (!t.nvcc_error.empty()) return t.nvcc_error;
      if (!t.headers_error.empty() && !cache_has_units()) return t.headers_error;
      return std::string();
    }();
    return why;
  }
  std::string supports(const GemmProblem& p) const override { return unsupported_reason(p); }

  std::vector<Candidate> candidates(const GemmProblem& p, const DeviceInfo& device,
                                    const SearchOptions& search) const override {
    GF_CHECK(unavailable().empty(), "{}", unavailable());
    GF_CHECK(!device.present || device.cc_major == 9,
             "the CUTLASS SM90 kernels need sm_90a (Hopper); this GPU is sm_{}{}", device.cc_major, device.cc_minor);
    std::vector<Candidate> out;
    if (search.alignment < 16) return out;  // TMA takes 16-byte aligned operands only
    for (const CutlassConfig& c : ranked_configs(p, device, search.level))
      out.push_back({name(), c.name(), c.to_json()});
    GF_CHECK(!out.empty(), "no CUTLASS kernel fits {}", p.key());
    if (search.top_k > 0 && out.size() > size_t(search.top_k)) out.resize(size_t(search.top_k));
    return out;
  }

  CompileReport compile(const GemmProblem&, const Candidate& c, bool use_cache) const override {
    return compile_unit(CutlassConfig::from_json(c.config).unit, use_cache).report;
  }

  std::unique_ptr<Kernel> build(const GemmProblem& p, const Candidate& c) const override {
    const CutlassConfig cfg = CutlassConfig::from_json(c.config);
    const CompiledUnit unit = compile_unit(cfg.unit, /*use_cache=*/true);
    GF_CHECK(unit.report.ok, "cutlass {} failed to compile:\n{}", cfg.unit.name(), unit.report.log);
    return load_kernel(cfg, p, unit.library);
  }
};

}  // namespace

std::shared_ptr<Backend> make_backend() { return std::make_shared<CutlassBackend>(); }

}  // namespace gf::cutlass_backend

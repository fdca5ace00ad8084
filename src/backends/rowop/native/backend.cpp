// The native row-op backend: gemmforge's own row-op templates (kernels/rowops/), compiled per
// config by NVRTC. Its configs are ranked by rules of thumb (space.cpp); the tuner measures them.
#include "backends/registry.hpp"
#include "backends/rowop/native/kernel.hpp"
#include "core/hash.hpp"
#include "cuda/nvrtc.hpp"
#include "gemmforge/error.hpp"

namespace gf::rowops {
namespace {

// Configs offered per search level (a config's pair-max twin comes with it).
constexpr int kFastConfigs = 8, kDefaultConfigs = 16;

class RowOpsBackend final : public RowOpBackend {
 public:
  std::string name() const override { return "native"; }
  // The templates' sources are part of the version: a changed template invalidates its decisions.
  std::string version() const override {
    static const std::string v =
        std::string(GF_VERSION) + "+" + hex64(jit::toolchain_hash()).substr(0, 8) + "/nvrtc" + cuda::nvrtc_version();
    return v;
  }
  std::string supports(const RowOpSpec& s) const override { return s.invalid_reason(); }

  std::vector<Candidate> candidates(const RowOpSpec& s, const DeviceInfo& device,
                                    const SearchOptions& search) const override {
    GF_CHECK(!device.present || device.cc_major == 9, "the row-op templates need sm_90 (Hopper); this GPU is sm_{}{}",
             device.cc_major, device.cc_minor);
    const int n = search.top_k > 0                 ? search.top_k
                  : search.level == Search::fast   ? kFastConfigs
                  : search.level == Search::normal ? kDefaultConfigs
                                                   : 0;
    std::vector<Candidate> out;
    for (const RowConfig& c : first_configs(row_configs(s), n)) out.push_back({name(), c.name(s), c.to_json()});
    GF_CHECK(!out.empty(), "no row-op config fits {}", s.key());
    return out;
  }

  CompileReport compile(const RowOpSpec& s, const Candidate& c, bool use_cache) const override {
    return compile_row_kernel(s, RowConfig::from_json(c.config), use_cache).report;
  }

  std::unique_ptr<RowOpKernel> build(const RowOpSpec& s, const Candidate& c) const override {
    return load_row_kernel(s, RowConfig::from_json(c.config));
  }
};

}  // namespace

std::shared_ptr<RowOpBackend> make_backend() { return std::make_shared<RowOpsBackend>(); }

}  // namespace gf::rowops

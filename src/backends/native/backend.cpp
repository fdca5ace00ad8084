#include "backends/registry.hpp"

namespace gf::native {
namespace {
class NativeBackend final : public Backend {
 public:
  std::string name() const override { return "native"; }
  std::string version() const override { return "0"; }
  std::string unavailable() const override { return "not built yet"; }
  std::string supports(const GemmProblem&) const override { return "not built yet"; }
  std::vector<Candidate> candidates(const GemmProblem&, const DeviceInfo&, const SearchOptions&) const override {
    return {};
  }
  std::unique_ptr<Kernel> build(const GemmProblem&, const Candidate&) const override { return nullptr; }
};
}  // namespace
std::shared_ptr<Backend> make_backend() { return std::make_shared<NativeBackend>(); }
}  // namespace gf::native

// The unfused plan: a plain GEMM from another backend into a scratch buffer, then the epilogue as
// a separate elementwise kernel (what eager frameworks run). Its candidates wrap the first few
// candidates of each other backend for the plain problem; the one wrapping cuBLASLt's rank-0
// algorithm is "eager". An fp8 GEMM's scales stay in the plain GEMM (torch._scaled_mm, then the
// epilogue).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

#include "backends/gemm/unfused/epilogue_kernel.hpp"
#include "backends/registry.hpp"
#include "gemmforge/error.hpp"

namespace gf::unfused {
namespace {

constexpr int kPerBackend = 2;
const char* const kInner[] = {"cublaslt", "native"};

GemmProblem plain_of(const GemmProblem& p) {
  GemmProblem plain = p;
  plain.epilogue = {};
  plain.epilogue.scale = p.epilogue.scale;
  return plain;
}

Candidate inner_of(const Candidate& c) { return c.config.at("gemm").get<Candidate>(); }

class UnfusedKernel final : public Kernel {
 public:
  UnfusedKernel(const GemmProblem& p, std::unique_ptr<Kernel> gemm)
      : problem_(p),
        gemm_(std::move(gemm)),
        gemm_bytes_((gemm_->workspace_bytes() + 255) / 256 * 256),
        g_bytes_(size_t(p.batch * p.m * p.n) * size_t(dtype_bytes(p.out))) {}

  // The workspace: the GEMM's own, then G = A B^T before the epilogue.
  void launch(const GemmArgs& args, cudaStream_t stream) override {
    GF_CHECK(args.workspace_bytes >= workspace_bytes(), "unfused {}: needs {} bytes of workspace, got {}",
             problem_.key(), workspace_bytes(), args.workspace_bytes);
    void* g = static_cast<char*>(args.workspace) + gemm_bytes_;
    GemmArgs plain = args;
    plain.d = g;
    plain.c = nullptr;
    plain.bias = nullptr;
    plain.workspace_bytes = gemm_->workspace_bytes();
    gemm_->launch(plain, stream);
    apply_epilogue(problem_, g, args, stream);
  }
  size_t workspace_bytes() const override { return gemm_bytes_ + g_bytes_; }
  size_t alignment() const override { return gemm_->alignment(); }

 private:
  GemmProblem problem_;
  std::unique_ptr<Kernel> gemm_;
  size_t gemm_bytes_, g_bytes_;
};

class UnfusedBackend final : public Backend {
 public:
  std::string name() const override { return "unfused"; }
  std::string version() const override { return "1"; }
  std::string supports(const GemmProblem& p) const override {
    if (p.epilogue.is_identity()) return "the epilogue is the identity: nothing to unfuse";
    if (plain_of(p) == p) return "the epilogue is the fp8 scales alone, which the GEMM applies: nothing to unfuse";
    if (is_fp8(p.out)) return "an fp8 D is scaled and rounded inside the GEMM: no epilogue can follow it";
    return "";
  }

  std::vector<Candidate> candidates(const GemmProblem& p, const DeviceInfo& device,
                                    const SearchOptions& search) const override {
    const GemmProblem plain = plain_of(p);
    std::vector<Candidate> out;
    std::vector<std::string> why_none;
    for (const char* inner_name : kInner) {
      auto inner = find_backend<GemmProblem>(inner_name);
      if (!inner || !inner->unavailable().empty()) continue;
      if (std::string why = inner->supports(plain); !why.empty()) {
        why_none.push_back(fmt::format("{}: {}", inner_name, why));
        continue;
      }
      try {
        auto cs = inner->candidates(plain, device, search);
        for (size_t i = 0; i < cs.size() && i < kPerBackend; ++i)
          out.push_back({name(), cs[i].id(), {{"gemm", cs[i]}}});
      } catch (const Error& e) {
        why_none.push_back(fmt::format("{}: {}", inner_name, e.what()));
      }
    }
    GF_CHECK(!out.empty(), "no backend offers the plain GEMM of {} ({})", p.key(), fmt::join(why_none, "; "));
    return out;
  }

  CompileReport compile(const GemmProblem& p, const Candidate& c, bool use_cache) const override {
    Candidate inner = inner_of(c);
    return backend(inner)->compile(plain_of(p), inner, use_cache);
  }

  std::unique_ptr<Kernel> build(const GemmProblem& p, const Candidate& c) const override {
    Candidate inner = inner_of(c);
    return std::make_unique<UnfusedKernel>(p, backend(inner)->build(plain_of(p), inner));
  }

 private:
  static std::shared_ptr<Backend> backend(const Candidate& inner) {
    auto b = find_backend<GemmProblem>(inner.backend);
    GF_CHECK(b, "unfused candidate names backend '{}', which this build lacks", inner.backend);
    return b;
  }
};

}  // namespace

std::shared_ptr<Backend> make_backend() { return std::make_shared<UnfusedBackend>(); }

}  // namespace gf::unfused

#include "gemmforge/runtime.hpp"

#include <mutex>
#include <unordered_map>

#include "core/log.hpp"
#include "cuda/memory.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/tuning_db.hpp"

namespace gf {

struct Runtime::Impl {
  DeviceInfo device = DeviceInfo::query();
  std::unique_ptr<TuningDb> db;
  std::mutex mu;
  struct Entry {
    Candidate candidate;
    std::unique_ptr<Kernel> kernel;
  };
  std::unordered_map<std::string, Entry> kernels;
  cuda::DeviceBuffer workspace;

  Entry& entry(const GemmProblem& p) {
    std::string key = p.key();
    if (auto it = kernels.find(key); it != kernels.end()) return it->second;
    Candidate cand;
    if (auto d = db->decision(key)) {
      cand = {d->backend, d->candidate, d->config};
    } else {
      auto lt = find_backend("cublaslt");
      std::string why = lt->supports(p);
      GF_CHECK(why.empty(), "{} is not tuned and cuBLASLt cannot run it ({}); run gemmforge tune --problem {}", key,
               why, key);
      log().warn("{} is not tuned on this device; using cuBLASLt's default algorithm (gemmforge tune --problem {})",
                 key, key);
      cand = lt->candidates(p, device, {.level = Search::fast, .top_k = 1}).front();
    }
    auto backend = find_backend(cand.backend);
    GF_CHECK(backend, "tuning DB names backend '{}', which this build lacks", cand.backend);
    Entry e{cand, backend->build(p, cand)};
    if (e.kernel->workspace_bytes() > workspace.bytes()) workspace = cuda::DeviceBuffer(e.kernel->workspace_bytes());
    return kernels.emplace(key, std::move(e)).first->second;
  }
};

Runtime::Runtime(RuntimeOptions options) : impl_(std::make_unique<Impl>()) {
  GF_CHECK(impl_->device.present, "gf::Runtime needs a GPU: {}", impl_->device.absent_reason);
  auto path = options.db_path.empty() ? TuningDb::default_path() : options.db_path;
  impl_->db = std::make_unique<TuningDb>(path, tuning_fingerprint(impl_->device));
}

Runtime::~Runtime() = default;

void Runtime::gemm(const GemmProblem& problem, const GemmArgs& args, cudaStream_t stream) {
  check_gemm_args(problem, args);
  std::lock_guard lock(impl_->mu);
  Impl::Entry& e = impl_->entry(problem);
  GemmArgs a = args;
  if (!a.workspace) {
    a.workspace = impl_->workspace.get();
    a.workspace_bytes = impl_->workspace.bytes();
  }
  e.kernel->launch(a, stream);
}

std::string Runtime::choice(const GemmProblem& problem) {
  std::lock_guard lock(impl_->mu);
  return impl_->entry(problem).candidate.id();
}

}  // namespace gf

#include "gemmforge/runtime.hpp"

#include <mutex>
#include <unordered_map>

#include "core/log.hpp"
#include "cuda/memory.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/tuning_db.hpp"
#include "runtime/decisions.hpp"

namespace gf {

struct Runtime::Impl {
  DeviceInfo device = DeviceInfo::query();
  std::unique_ptr<TuningDb> db;
  // One per problem key, built once: concurrent first calls wait for the one build, later calls
  // launch without taking any lock.
  struct Entry {
    std::once_flag built;
    Candidate candidate;
    std::unique_ptr<Kernel> kernel;
    cuda::DeviceBuffer workspace;
  };
  std::mutex mu;  // guards the map, never a build or a launch
  std::unordered_map<std::string, std::shared_ptr<Entry>> entries;

  void build(Entry& e, const GemmProblem& p) {
    const std::string key = p.key();
    if (auto stored = runtime::stored_choice<GemmProblem>(db.get(), key)) {
      e.candidate = *stored;
    } else {
      auto lt = find_backend<GemmProblem>("cublaslt");
      std::string why = lt->supports(p);
      GF_CHECK(why.empty(), "{} has no usable tuned choice and cuBLASLt cannot run it ({}); run gemmforge tune -p {}",
               key, why, key);
      if (!db || !db->decision(key))
        log().warn("{} is not tuned on this device; using cuBLASLt's default algorithm (gemmforge tune -p {})", key,
                   key);
      e.candidate = lt->candidates(p, device, {.level = Search::fast, .top_k = 1}).front();
    }
    auto backend = find_backend<GemmProblem>(e.candidate.backend);
    e.kernel = backend->build(p, e.candidate);
    e.workspace = cuda::DeviceBuffer(e.kernel->workspace_bytes());
    log().debug("dispatch {} -> {} {}", key, e.candidate.id(), e.candidate.config.dump());
  }

  Entry& entry(const GemmProblem& p) {
    std::shared_ptr<Entry> e;
    {
      std::lock_guard lock(mu);
      auto& slot = entries[p.key()];
      if (!slot) slot = std::make_shared<Entry>();
      e = slot;
    }
    std::call_once(e->built, [&] { build(*e, p); });  // a build that throws is tried again next call
    return *e;
  }
};

Runtime::Runtime(RuntimeOptions options) : impl_(std::make_unique<Impl>()) {
  GF_CHECK(impl_->device.present, "gf::Runtime needs a GPU: {}", impl_->device.absent_reason);
  auto path = options.db_path.empty() ? TuningDb::default_path() : options.db_path;
  impl_->db = runtime::open_db_or_none(path, impl_->device.fingerprint());
}

Runtime::~Runtime() = default;

void Runtime::gemm(const GemmProblem& problem, const GemmArgs& args, cudaStream_t stream) {
  check_gemm_args(problem, args);
  Impl::Entry& e = impl_->entry(problem);
  GemmArgs a = args;
  if (!a.workspace) {
    a.workspace = e.workspace.get();
    a.workspace_bytes = e.workspace.bytes();
  }
  e.kernel->launch(a, stream);
}

std::string Runtime::choice(const GemmProblem& problem) { return impl_->entry(problem).candidate.id(); }

}  // namespace gf

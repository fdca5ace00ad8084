#include "gemmforge/runtime.hpp"

#include <map>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "core/log.hpp"
#include "core/once.hpp"
#include "cuda/memory.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/tuning_db.hpp"
#include "runtime/decisions.hpp"
#include "runtime/record.hpp"

namespace gf {
namespace {

bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  GF_CUDA_CHECK(cudaStreamIsCapturing(stream, &status));
  return status != cudaStreamCaptureStatusNone;
}

void refuse_during_capture(const GemmProblem& p, cudaStream_t stream, std::string_view what) {
  GF_CHECK(!capturing(stream),
           "gemm {}: {} during CUDA graph capture (it would compile or allocate); call Runtime::prepare with this "
           "problem and stream before capturing",
           p.key(), what);
}

}  // namespace

// Named, not anonymous: Runtime::Impl holds Dispatches, and a class of external linkage with a
// field of an anonymous type draws a warning where this file is compiled in a unity batch.
namespace runtime {

// A kernel and its workspaces, one per stream, each zeroed when made.
class Dispatch {
 public:
  Dispatch(const GemmProblem& p, Candidate candidate) : candidate_(std::move(candidate)) {
    auto backend = find_backend<GemmProblem>(candidate_.backend);
    GF_CHECK(backend, "gemm {}: backend {} is not in this build", p.key(), candidate_.backend);
    kernel_ = backend->build(p, candidate_);
  }

  const Candidate& candidate() const { return candidate_; }
  size_t alignment() const { return kernel_->alignment(); }

  void* workspace(const GemmProblem& p, cudaStream_t stream) {
    const size_t bytes = kernel_->workspace_bytes();
    if (bytes == 0) return nullptr;
    std::lock_guard lock(mu_);
    auto it = workspaces_.find(stream);
    if (it != workspaces_.end()) return it->second.get();
    refuse_during_capture(p, stream, "a first use on this stream");
    cuda::DeviceBuffer buffer(bytes);
    GF_CUDA_CHECK(cudaMemsetAsync(buffer.get(), 0, bytes, stream));  // ordered before the launch
    return workspaces_.emplace(stream, std::move(buffer)).first->second.get();
  }

  void launch(const GemmProblem& p, const GemmArgs& args, cudaStream_t stream) {
    GemmArgs a = args;
    if (!a.workspace) {
      a.workspace = workspace(p, stream);
      a.workspace_bytes = kernel_->workspace_bytes();
    }
    kernel_->launch(a, stream);
  }

 private:
  Candidate candidate_;
  std::unique_ptr<Kernel> kernel_;
  std::mutex mu_;  // guards the map, never a launch
  std::unordered_map<cudaStream_t, cuda::DeviceBuffer> workspaces_;
};

// The entries' key: the problem's fields, not its text, whose formatting cost every call. alpha
// and beta stay out of the hash (-0 and 0 are equal with different bits); equality compares them.
struct ProblemHash {
  size_t operator()(const GemmProblem& p) const {
    const Epilogue& e = p.epilogue;
    size_t h = 0;
    for (uint64_t v : {uint64_t(p.m), uint64_t(p.n), uint64_t(p.k), uint64_t(p.batch),
                       uint64_t(p.a) | uint64_t(p.b) << 8 | uint64_t(p.out) << 16 | uint64_t(p.layout) << 24,
                       uint64_t(e.bias) | uint64_t(e.act) << 8 | uint64_t(e.gate) << 16 | uint64_t(e.scale) << 24})
      h ^= std::hash<uint64_t>{}(v) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h;
  }
};

}  // namespace runtime

struct Runtime::Impl {
  using Dispatch = runtime::Dispatch;
  DeviceInfo device = DeviceInfo::query();
  std::unique_ptr<TuningDb> db;

  // One per problem key, built once: concurrent first calls wait for the one build.
  struct Entry {
    Once built;
    std::unique_ptr<Dispatch> chosen;
    std::mutex mu;  // guards the fallbacks (and their builds: rare, and only for their alignment)
    std::map<size_t, std::unique_ptr<Dispatch>> by_alignment;  // for pointers `chosen` cannot take
  };
  std::mutex mu;  // guards the map, never a build or a launch
  std::unordered_map<GemmProblem, std::shared_ptr<Entry>, runtime::ProblemHash> entries;

  // What runs a problem without a decision: cuBLASLt's default algorithm; for epilogues it lacks,
  // cuBLASLt's plain GEMM and the epilogue after it; for what cuBLASLt cannot do at all (fp8 block
  // scales on this GPU), the native kernel its cost model ranks first (compiled at first use).
  Candidate default_candidate(const GemmProblem& p, size_t alignment) const {
    std::string why_not;
    for (const char* name : {"cublaslt", "unfused", "native"}) {
      auto backend = find_backend<GemmProblem>(name);
      std::string why = backend ? backend->supports(p) : "not in this build";
      if (why.empty()) {
        try {
          auto cs = backend->candidates(p, device, {.level = Search::fast, .top_k = 1, .alignment = alignment});
          if (!cs.empty()) return cs.front();
          why = fmt::format("no kernel for {}-byte aligned operands", alignment);
        } catch (const Error& e) {
          why = e.what();
        }
      }
      why_not += fmt::format("{}{}: {}", why_not.empty() ? "" : "; ", name, why);
    }
    // Another backend (Triton, CuTe DSL, CUTLASS) may still run it once tuned; candidates tells.
    GF_FAIL(
        "{} has no usable tuned choice and no default kernel ({}); `gemmforge candidates -p {}` lists what "
        "any backend offers, `gemmforge tune -p {}` stores the fastest",
        p.key(), why_not, p.key(), p.key());
  }

  void build(Entry& e, const GemmProblem& p) {
    const std::string key = p.key();
    std::optional<Candidate> c = runtime::stored_choice<GemmProblem>(db.get(), key);
    if (!c) {
      c = default_candidate(p, 256);
      if (!db || !db->decision(key)) {
        log().warn("{} is not tuned on this device; using {} (gemmforge tune -p {})", key, c->id(), key);
        runtime::record_untuned(key);
      }
    }
    e.chosen = std::make_unique<Dispatch>(p, *c);
    log().debug("dispatch {} -> {} {}", key, c->id(), c->config.dump());
  }

  // The problem's entry, built; `stream`, where given, is the one the caller will launch on.
  Entry& entry(const GemmProblem& p, const cudaStream_t* stream) {
    std::shared_ptr<Entry> e;
    {
      std::lock_guard lock(mu);
      auto& slot = entries[p];
      if (!slot) slot = std::make_shared<Entry>();
      e = slot;
    }
    if (!e->built.done()) {
      if (stream) refuse_during_capture(p, *stream, "a first use");
      e->built.run([&] { build(*e, p); });  // a build that throws is tried again next call
    }
    return *e;
  }

  // The kernel for these pointers: the chosen one, or the fallback for their alignment.
  Dispatch& dispatch(Entry& e, const GemmProblem& p, const GemmArgs& args, cudaStream_t stream) {
    const size_t alignment = pointer_alignment(args);
    if (alignment >= e.chosen->alignment()) return *e.chosen;
    std::lock_guard lock(e.mu);
    auto& fallback = e.by_alignment[alignment];
    if (!fallback) {
      refuse_during_capture(p, stream, fmt::format("a first call with {}-byte aligned operands", alignment));
      fallback = std::make_unique<Dispatch>(p, default_candidate(p, alignment));
      log().warn("{}: operands aligned to {} bytes, which {} cannot take (it needs {}); using {}", p.key(), alignment,
                 e.chosen->candidate().id(), e.chosen->alignment(), fallback->candidate().id());
    }
    return *fallback;
  }
};

Runtime::Runtime(RuntimeOptions options) : impl_(std::make_unique<Impl>()) {
  GF_CHECK(impl_->device.present, "gf::Runtime needs a GPU: {}", impl_->device.absent_reason);
  impl_->db = runtime::open_db_or_none(options.db_path.string(), impl_->device.fingerprint());
}

Runtime::~Runtime() = default;

void Runtime::gemm(const GemmProblem& problem, const GemmArgs& args, cudaStream_t stream) {
  check_gemm_args(problem, args);
  Impl::Entry& e = impl_->entry(problem, &stream);
  impl_->dispatch(e, problem, args, stream).launch(problem, args, stream);
}

void Runtime::prepare(const std::vector<GemmProblem>& problems, const std::vector<cudaStream_t>& streams) {
  for (const GemmProblem& p : problems) {
    p.validate();
    Impl::Entry& e = impl_->entry(p, nullptr);
    for (cudaStream_t s : streams) e.chosen->workspace(p, s);
  }
  for (cudaStream_t s : streams) GF_CUDA_CHECK(cudaStreamSynchronize(s));  // the workspaces' zeroing
}

std::string Runtime::choice(const GemmProblem& problem) {
  return impl_->entry(problem, nullptr).chosen->candidate().id();
}

}  // namespace gf

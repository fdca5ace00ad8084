// A unit's instance as a Kernel: CUTLASS's Params are built once per problem and pointer set
// (prepare), so a launch is the call alone.
#include "backends/gemm/cutlass/kernel.hpp"

#include <dlfcn.h>

#include <deque>
#include <map>
#include <mutex>

#include "cuda/check.hpp"
#include "gemm/cutlass/abi.h"
#include "gemmforge/error.hpp"

namespace gf::cutlass_backend {
namespace {

// A loaded unit's entry points. Units stay loaded until the process ends: their kernels are
// registered with the CUDA runtime, and closing one under a live handle would unmap its code.
struct Library {
  gf_cutlass_count_fn count = nullptr;
  gf_cutlass_name_fn name = nullptr;
  gf_cutlass_workspace_bytes_fn workspace_bytes = nullptr;
  gf_cutlass_can_implement_fn can_implement = nullptr;
  gf_cutlass_prepare_fn prepare = nullptr;
  gf_cutlass_run_fn run = nullptr;
  gf_cutlass_release_fn release = nullptr;

  int index_of(const std::string& instance) const {
    for (int i = 0; i < count(); ++i)
      if (instance == name(i)) return i;
    return -1;
  }
};

// CUTLASS writes its reasons into a buffer of this size.
constexpr size_t kWhyBytes = 512;

template <class Fn>
Fn symbol(void* handle, const char* name, const std::filesystem::path& path) {
  void* s = dlsym(handle, name);
  GF_CHECK(s, "CUTLASS unit {} lacks {}", path.string(), name);
  return reinterpret_cast<Fn>(s);
}

const Library& open_library(const std::filesystem::path& path) {
  static std::mutex mu;
  static std::map<std::string, Library> loaded;
  std::lock_guard lock(mu);
  if (auto it = loaded.find(path.string()); it != loaded.end()) return it->second;
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  GF_CHECK(h, "cannot load the CUTLASS unit {}: {}", path.string(), dlerror());
  const int abi = symbol<gf_cutlass_abi_fn>(h, "gf_cutlass_abi", path)();
  GF_CHECK(abi == GF_CUTLASS_ABI, "CUTLASS unit {} has ABI {}, this gemmforge {}: compile it again", path.string(), abi,
           GF_CUTLASS_ABI);
  Library lib{.count = symbol<gf_cutlass_count_fn>(h, "gf_cutlass_count", path),
              .name = symbol<gf_cutlass_name_fn>(h, "gf_cutlass_name", path),
              .workspace_bytes = symbol<gf_cutlass_workspace_bytes_fn>(h, "gf_cutlass_workspace_bytes", path),
              .can_implement = symbol<gf_cutlass_can_implement_fn>(h, "gf_cutlass_can_implement", path),
              .prepare = symbol<gf_cutlass_prepare_fn>(h, "gf_cutlass_prepare", path),
              .run = symbol<gf_cutlass_run_fn>(h, "gf_cutlass_run", path),
              .release = symbol<gf_cutlass_release_fn>(h, "gf_cutlass_release", path)};
  return loaded.emplace(path.string(), lib).first->second;
}

// Prepared pointer sets a kernel keeps: the timing harness rotates a few input sets, and each
// keeps its Params; the oldest is released past this.
constexpr size_t kMaxPrepared = 8;

// The problem's sizes, epilogue scalars and the config's tile order, without pointers or a device.
gf_cutlass_problem sizes_of(const GemmProblem& p, const CutlassConfig& c) {
  gf_cutlass_problem out{};
  out.m = p.m, out.n = p.n, out.k = p.k, out.batch = p.batch;
  out.alpha = p.epilogue.alpha, out.beta = p.epilogue.beta;
  out.raster = int(c.raster), out.swizzle = c.swizzle;
  return out;
}

int instance_index(const Library& lib, const CutlassConfig& c, const std::filesystem::path& library) {
  const int i = lib.index_of(c.kernel_name());
  GF_CHECK(i >= 0, "CUTLASS unit {} lacks {}", library.string(), c.kernel_name());
  return i;
}

std::string refusal_of(const Library& lib, int index, const gf_cutlass_problem& p) {
  char why[kWhyBytes] = "";
  return lib.can_implement(index, &p, why, sizeof why) ? "" : std::string(why);
}

class CutlassKernel final : public Kernel {
 public:
  CutlassKernel(const CutlassConfig& c, const GemmProblem& p, const std::filesystem::path& library)
      : name_(c.name()),
        problem_(p),
        lib_(open_library(library)),
        index_(instance_index(lib_, c, library)),
        base_(sizes_of(p, c)) {
    GF_CUDA_CHECK(cudaGetDevice(&base_.device));
    GF_CUDA_CHECK(cudaDeviceGetAttribute(&base_.sm_count, cudaDevAttrMultiProcessorCount, base_.device));
    const std::string why = refusal_of(lib_, index_, base_);
    GF_CHECK(why.empty(), "cutlass {}: {}", name_, why);
    workspace_ = lib_.workspace_bytes(index_, &base_);
  }

  size_t workspace_bytes() const override { return workspace_; }
  size_t alignment() const override { return 16; }  // TMA

  void launch(const GemmArgs& args, cudaStream_t stream) override {
    const Epilogue& e = problem_.epilogue;
    GF_CHECK(args.a && args.b && args.d, "cutlass {}: A, B and D must be non-null", problem_.key());
    GF_CHECK(!e.has_c() || args.c, "cutlass {}: the epilogue reads C but C is null", problem_.key());
    GF_CHECK(e.bias == BiasKind::none || args.bias, "cutlass {}: the epilogue adds a bias but bias is null",
             problem_.key());
    GF_CHECK(pointer_alignment(args) >= alignment(), "cutlass {}: operands must be 16-byte aligned (TMA)",
             problem_.key());
    GF_CHECK(e.scale == ScaleKind::none || (args.scale_a && args.scale_b), "cutlass {}: fp8 scales are null",
             problem_.key());
    GF_CHECK(args.workspace_bytes >= workspace_ && (workspace_ == 0 || args.workspace),
             "cutlass {}: needs {} bytes of workspace, got {}", problem_.key(), workspace_, args.workspace_bytes);
    std::shared_ptr<void> handle = prepared(args, stream);
    const int rc = lib_.run(handle.get(), stream);
    GF_CHECK(rc == 0, "cutlass {}: launch failed: {}", name_, cudaGetErrorString(cudaError_t(rc)));
  }

 private:
  struct Prepared {
    gf_cutlass_problem key;
    std::shared_ptr<void> handle;
  };

  static bool same_pointers(const gf_cutlass_problem& x, const gf_cutlass_problem& y) {
    return x.a == y.a && x.b == y.b && x.c == y.c && x.bias == y.bias && x.d == y.d && x.workspace == y.workspace &&
           x.scale_a == y.scale_a && x.scale_b == y.scale_b;
  }

  // The handle of this pointer set: prepared (Params built, workspace initialised on stream) the
  // first time it is seen. Held by shared_ptr, so a launch on another thread that evicts it does
  // not release it under this one.
  std::shared_ptr<void> prepared(const GemmArgs& args, cudaStream_t stream) {
    gf_cutlass_problem p = base_;
    p.a = args.a, p.b = args.b, p.c = problem_.epilogue.has_c() ? args.c : nullptr;
    p.bias = problem_.epilogue.bias == BiasKind::none ? nullptr : args.bias;
    p.d = args.d, p.workspace = workspace_ ? args.workspace : nullptr;
    const bool scaled = problem_.epilogue.scale != ScaleKind::none;
    p.scale_a = scaled ? args.scale_a : nullptr, p.scale_b = scaled ? args.scale_b : nullptr;
    std::lock_guard lock(mu_);
    for (const Prepared& q : prepared_)
      if (same_pointers(q.key, p)) return q.handle;
    char why[kWhyBytes] = "";
    void* h = lib_.prepare(index_, &p, stream, why, sizeof why);
    GF_CHECK(h, "cutlass {}: {}", name_, why);
    if (prepared_.size() == kMaxPrepared) prepared_.pop_front();
    prepared_.push_back({p, std::shared_ptr<void>(h, lib_.release)});
    return prepared_.back().handle;
  }

  std::string name_;
  GemmProblem problem_;
  const Library& lib_;
  int index_;
  gf_cutlass_problem base_;  // the problem, without pointers
  size_t workspace_ = 0;
  std::mutex mu_;
  std::deque<Prepared> prepared_;
};

}  // namespace

std::unique_ptr<Kernel> load_kernel(const CutlassConfig& c, const GemmProblem& p,
                                    const std::filesystem::path& library) {
  return std::make_unique<CutlassKernel>(c, p, library);
}

std::string refusal(const CutlassConfig& c, const GemmProblem& p, const std::filesystem::path& library) {
  const Library& lib = open_library(library);
  return refusal_of(lib, instance_index(lib, c, library), sizes_of(p, c));
}

std::vector<std::string> unit_instances(const std::filesystem::path& library) {
  const Library& lib = open_library(library);
  std::vector<std::string> out;
  for (int i = 0; i < lib.count(); ++i) out.push_back(lib.name(i));
  return out;
}

}  // namespace gf::cutlass_backend

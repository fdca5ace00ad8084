// Test backends that plant bad candidates, one per family, to show that tuning survives them: one
// faults with an illegal address (a lost CUDA context), one hangs, one writes wrong values, one
// crashes the worker process from the host; two compute the right values with a real backend's
// kernel but write a byte past the output ("past_end") or stop writing after their first launch
// ("stale": its timed launches leave the output as it was). Registered only when
// GEMMFORGE_PLANT_FAULTS=1.
#include <cstdlib>
#include <type_traits>

#include "backends/registry.hpp"
#include "cuda/check.hpp"
#include "cuda/module.hpp"
#include "cuda/nvrtc.hpp"

namespace gf::faulty {
namespace {

constexpr const char* kSource = R"(
extern "C" __global__ void illegal_address(unsigned char* d) { *(volatile int*)(d - (1ull << 40)) = 1; }
// The output is poisoned with NaN before the run, so this volatile read never sees the value it
// waits for (a loop without side effects could legally be removed by the compiler).
extern "C" __global__ void hang(unsigned char* d) {
  while (*(volatile unsigned*)d != 0x12345678u) __nanosleep(1000);
}
)";

constexpr const char* kModes[] = {"illegal_address", "hang", "wrong", "abort", "past_end", "stale"};

// The real kernel the right-valued modes run: cuBLASLt's first GEMM, the native row op's first.
template <class Problem>
std::unique_ptr<KernelOf<typename Problem::Args>> real_kernel(const Problem& p) {
  auto backend = find_backend<Problem>(std::is_same_v<Problem, GemmProblem> ? "cublaslt" : "native");
  GF_CHECK(backend, "the faulty backend needs a real one to compute with");
  return backend->build(p, backend->candidates(p, DeviceInfo::query(), {.level = Search::fast, .top_k = 1}).front());
}

// Runs its fault on the output of whichever family it is planted in.
template <class Args>
class FaultyKernel final : public KernelOf<Args> {
 public:
  FaultyKernel(std::string mode, size_t out_bytes, std::unique_ptr<KernelOf<Args>> real)
      : mode_(std::move(mode)), out_bytes_(out_bytes), real_(std::move(real)) {
    if (mode_ == "abort") std::abort();
    if (real_ || mode_ == "wrong") return;
    auto r = cuda::nvrtc_compile(kSource, "faulty.cu", {});
    GF_CHECK(r.ok, "faulty backend failed to compile: {}", r.log);
    module_ = cuda::Module(r.cubin);
    fn_ = module_.function(mode_.c_str());
  }
  size_t workspace_bytes() const override { return real_ ? real_->workspace_bytes() : 0; }
  size_t alignment() const override { return real_ ? real_->alignment() : 1; }

  void launch(const Args& args, cudaStream_t stream) override {
    void* out = output(args);
    if (mode_ == "stale") {
      if (launches_++ == 0) real_->launch(args, stream);
      return;
    }
    if (mode_ == "past_end") {
      real_->launch(args, stream);
      GF_CUDA_CHECK(cudaMemsetAsync(static_cast<char*>(out) + out_bytes_, 0x42, 1, stream));
      return;
    }
    if (mode_ == "wrong") {
      GF_CUDA_CHECK(cudaMemsetAsync(out, 0, out_bytes_, stream));
      return;
    }
    void* params[] = {&out};
    cuda::launch(fn_, {.grid = {1, 1, 1}, .block = {1, 1, 1}}, params, stream);
  }

 private:
  static void* output(const GemmArgs& a) { return a.d; }
  static void* output(const RowOpArgs& a) { return a.y; }

  std::string mode_;
  size_t out_bytes_;
  std::unique_ptr<KernelOf<Args>> real_;
  int launches_ = 0;
  cuda::Module module_;
  CUfunction fn_ = nullptr;
};

size_t output_bytes(const GemmProblem& p) { return size_t(p.batch * p.m * p.out_cols() * dtype_bytes(p.out)); }
size_t output_bytes(const RowOpSpec& s) { return size_t(s.rows * s.cols * dtype_bytes(s.out)); }

template <class Problem>
class FaultyBackend final : public BackendOf<Problem> {
 public:
  using Kernel = typename BackendOf<Problem>::Kernel;
  std::string name() const override { return "faulty"; }
  std::string version() const override { return "1"; }
  std::string supports(const Problem&) const override { return ""; }
  std::vector<Candidate> candidates(const Problem&, const DeviceInfo&, const SearchOptions&) const override {
    std::vector<Candidate> out;
    for (const char* mode : kModes) out.push_back({name(), mode, {{"mode", mode}}});
    return out;
  }
  std::unique_ptr<Kernel> build(const Problem& p, const Candidate& c) const override {
    const std::string mode = c.config.at("mode").get<std::string>();
    return std::make_unique<FaultyKernel<typename Problem::Args>>(
        mode, output_bytes(p), mode == "past_end" || mode == "stale" ? real_kernel(p) : nullptr);
  }
};

}  // namespace

std::shared_ptr<Backend> make_gemm_backend() { return std::make_shared<FaultyBackend<GemmProblem>>(); }
std::shared_ptr<RowOpBackend> make_rowop_backend() { return std::make_shared<FaultyBackend<RowOpSpec>>(); }

}  // namespace gf::faulty

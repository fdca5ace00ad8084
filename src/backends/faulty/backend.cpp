// Test backends that plant bad candidates, one per family, to show that tuning survives them: one
// faults with an illegal address (a lost CUDA context), one hangs, one writes wrong values, one
// crashes the worker process from the host. Registered only when GEMMFORGE_PLANT_FAULTS=1.
#include <cstdlib>

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

constexpr const char* kModes[] = {"illegal_address", "hang", "wrong", "abort"};

// Runs its fault on the output of whichever family it is planted in.
template <class Args>
class FaultyKernel final : public KernelOf<Args> {
 public:
  FaultyKernel(std::string mode, size_t out_bytes) : mode_(std::move(mode)), out_bytes_(out_bytes) {
    if (mode_ == "abort") std::abort();
    if (mode_ == "wrong") return;
    auto r = cuda::nvrtc_compile(kSource, "faulty.cu", {});
    GF_CHECK(r.ok, "faulty backend failed to compile: {}", r.log);
    module_ = cuda::Module(r.cubin);
    fn_ = module_.function(mode_.c_str());
  }
  void launch(const Args& args, cudaStream_t stream) override {
    void* out = output(args);
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
    return std::make_unique<FaultyKernel<typename Problem::Args>>(c.config.at("mode").get<std::string>(),
                                                                  output_bytes(p));
  }
};

}  // namespace

std::shared_ptr<Backend> make_gemm_backend() { return std::make_shared<FaultyBackend<GemmProblem>>(); }
std::shared_ptr<RowOpBackend> make_rowop_backend() { return std::make_shared<FaultyBackend<RowOpSpec>>(); }

}  // namespace gf::faulty

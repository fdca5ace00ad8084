// A test backend that plants bad candidates, to show that tuning survives them: one faults with
// an illegal address (a lost CUDA context), one hangs, one writes wrong values, one crashes the
// worker process from the host. Registered only when GEMMFORGE_PLANT_FAULTS=1.
#include <cstdlib>

#include "backends/registry.hpp"
#include "cuda/check.hpp"
#include "cuda/module.hpp"
#include "cuda/nvrtc.hpp"

namespace gf::faulty {
namespace {

constexpr const char* kSource = R"(
extern "C" __global__ void illegal_address(unsigned char* d) { *(volatile int*)(d - (1ull << 40)) = 1; }
// D is poisoned with NaN before the run, so this volatile read never sees the value it waits for
// (a loop without side effects could legally be removed by the compiler).
extern "C" __global__ void hang(unsigned char* d) {
  while (*(volatile unsigned*)d != 0x12345678u) __nanosleep(1000);
}
)";

class FaultyKernel final : public Kernel {
 public:
  FaultyKernel(std::string mode, size_t out_bytes) : mode_(std::move(mode)), out_bytes_(out_bytes) {
    if (mode_ == "abort") std::abort();
    if (mode_ == "wrong") return;
    auto r = cuda::nvrtc_compile(kSource, "faulty.cu", {});
    GF_CHECK(r.ok, "faulty backend failed to compile: {}", r.log);
    module_ = cuda::Module(r.cubin);
    fn_ = module_.function(mode_.c_str());
  }
  void launch(const GemmArgs& args, cudaStream_t stream) override {
    if (mode_ == "wrong") {
      GF_CUDA_CHECK(cudaMemsetAsync(args.d, 0, out_bytes_, stream));
      return;
    }
    void* d = args.d;
    void* params[] = {&d};
    cuda::launch(fn_, {.grid = {1, 1, 1}, .block = {1, 1, 1}}, params, stream);
  }

 private:
  std::string mode_;
  size_t out_bytes_;
  cuda::Module module_;
  CUfunction fn_ = nullptr;
};

class FaultyBackend final : public Backend {
 public:
  std::string name() const override { return "faulty"; }
  std::string version() const override { return "1"; }
  std::string supports(const GemmProblem&) const override { return ""; }
  std::vector<Candidate> candidates(const GemmProblem&, const DeviceInfo&, const SearchOptions&) const override {
    std::vector<Candidate> out;
    for (const char* mode : {"illegal_address", "hang", "wrong", "abort"})
      out.push_back({name(), mode, {{"mode", mode}}});
    return out;
  }
  std::unique_ptr<Kernel> build(const GemmProblem& p, const Candidate& c) const override {
    size_t bytes = size_t(p.batch * p.m * p.out_cols() * dtype_bytes(p.out));
    return std::make_unique<FaultyKernel>(c.config.at("mode").get<std::string>(), bytes);
  }
};

}  // namespace

std::shared_ptr<Backend> make_backend() { return std::make_shared<FaultyBackend>(); }

}  // namespace gf::faulty

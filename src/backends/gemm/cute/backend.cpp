// The CuTe DSL backend: gemmforge's CuTe DSL GEMM (python/gemmforge_cute) compiled by Python
// workers, without a GPU, into one shared object per config, dtype, layout and epilogue (the
// DSL's own host launcher behind a fixed C ABI, the DSL and CUDA runtimes linked in statically);
// loaded with dlopen and launched from C++. Machines without the DSL (the GPU machine) run from
// the kernel cache and name a miss.
#include <fmt/format.h>

#include <algorithm>

#include "backends/gemm/cute/space.hpp"
#include "backends/registry.hpp"
#include "core/hash.hpp"
#include "cuda/check.hpp"
#include "gemmforge/error.hpp"
#include "jit/cute_dsl.hpp"

namespace gf::cute_backend {
namespace {

constexpr int kAbi = 3;  // of the shim in python/gemmforge_cute/build.py

// The shim's argument block (python/gemmforge_cute/build.py, gf_cute_gemm_args).
struct ShimArgs {
  const void *a, *b, *c, *bias;
  const float *scale_a, *scale_b;
  void* d;
  float* partials;
  int32_t* counters;
  int64_t m, n, k, lda, ldb, ldc, ldd, bias_len, scale_a_len, scale_b_len, partials_len, counters_len;
  float alpha, beta;
  int32_t max_clusters;
};
using LaunchFn = int (*)(const ShimArgs*, cudaStream_t);

// The backend's version: the pin and the Python files that shape its kernels.
std::string version_string() {
  static const std::string v = jit::cute_dsl::version_string(
      {"gemmforge_cute/build.py", "gemmforge_cute/gemm_sm90.py", "gemmforge_cute/gemm_epilogue.py",
       "gemmforge_cute/gemm_block_scaled.py", "gemmforge_cute/activations.py"});
  return v;
}

jit::PythonArtifact compile_config(const CuteConfig& c, const GemmProblem& p, bool use_cache) {
  const nlohmann::json req = compile_request(c, p);
  const std::string key = "cute_" + c.name() + "-" + hex64(fnv1a(req.dump() + version_string()));
  return jit::cute_dsl::compile(req, key, c.name(), use_cache);
}

class CuteKernel final : public Kernel {
 public:
  CuteKernel(const CuteConfig& c, const GemmProblem& p, const std::string& so)
      : cfg_(c), problem_(p), so_(so, kAbi, "kernel " + c.name()), launch_(so_.entry<LaunchFn>("gf_cute_gemm")) {
    // The persistent schedule's grid: a cluster for every cluster's worth of SMs.
    int device = 0, sms = 0;
    GF_CUDA_CHECK(cudaGetDevice(&device));
    GF_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    max_clusters_ = std::max(1, sms / (c.cluster_m * c.cluster_n));
  }

  size_t alignment() const override { return 16; }  // TMA: the kernel was compiled for it
  size_t workspace_bytes() const override { return split_.partials_bytes + split_.counters_bytes; }

  void launch(const GemmArgs& args, cudaStream_t stream) override {
    const GemmProblem& p = problem_;
    GF_CHECK(args.a && args.b && args.d, "cute {}: A, B and D must be non-null", p.key());
    GF_CHECK(pointer_alignment(args) >= alignment(), "cute {}: operands must be 16-byte aligned", p.key());
    GF_CHECK(!p.epilogue.has_c() || args.c, "cute {}: the residual needs C", p.key());
    GF_CHECK(p.epilogue.bias == BiasKind::none || args.bias, "cute {}: the bias epilogue needs a bias", p.key());
    const bool scaled = p.epilogue.scale != ScaleKind::none;
    GF_CHECK(!scaled || (args.scale_a && args.scale_b), "cute {}: fp8 scales need scale_a and scale_b", p.key());
    // Unused operands still cross as well-formed tensors: D's pointer stands in.
    const int64_t bias_len = p.epilogue.bias == BiasKind::row ? p.m : p.n;
    const auto* stand_in = static_cast<const float*>(args.d);
    const bool split = cfg_.split_k > 1;
    GF_CHECK(!split || (args.workspace && args.workspace_bytes >= workspace_bytes()),
             "cute {}: split-K needs {} bytes of zeroed workspace, got {}", p.key(), workspace_bytes(),
             args.workspace_bytes);
    auto* partials = split ? static_cast<float*>(args.workspace) : static_cast<float*>(args.d);
    auto* counters = split ? reinterpret_cast<int32_t*>(static_cast<char*>(args.workspace) + split_.partials_bytes)
                           : static_cast<int32_t*>(args.d);
    // Swap-AB computes D^T = B A^T (kernel_problem): B is its A, A its B, and D (C) read M-major
    // is D^T (C^T) with the same pitch; the scales of A's rows and B's columns trade places.
    const bool swap = cfg_.swap_ab;
    const GemmProblem& q = kernel_;
    const ShimArgs x{.a = swap ? args.b : args.a,
                     .b = swap ? args.a : args.b,
                     .c = args.c ? args.c : args.d,
                     .bias = args.bias ? args.bias : args.d,
                     .scale_a = scaled ? (swap ? args.scale_b : args.scale_a) : stand_in,
                     .scale_b = scaled ? (swap ? args.scale_a : args.scale_b) : stand_in,
                     .d = args.d,
                     .partials = partials,
                     .counters = counters,
                     .m = q.m,
                     .n = q.n,
                     .k = p.k,
                     .lda = p.k,
                     .ldb = p.layout == Layout::tn ? p.k : p.n,
                     .ldc = p.n,
                     .ldd = p.out_cols(),  // N, or N / 2 behind a SwiGLU gate
                     .bias_len = bias_len,
                     .scale_a_len = scaled ? q.scale_a_count() : 1,
                     .scale_b_len = scaled ? q.scale_b_count() : 1,
                     .partials_len = split ? int64_t(split_.partials_bytes / 4) : 1,
                     .counters_len = split ? int64_t(split_.counters_bytes / 4) : 1,
                     .alpha = p.epilogue.alpha,
                     .beta = p.epilogue.beta,
                     .max_clusters = max_clusters_};
    const int status = launch_(&x, stream);
    GF_CHECK(status == 0, "cute {} {}: the launch failed (error {})", cfg_.name(), p.key(), status);
  }

 private:
  CuteConfig cfg_;
  GemmProblem problem_;
  GemmProblem kernel_ = kernel_problem(cfg_, problem_);
  jit::cute_dsl::LoadedKernel so_;
  LaunchFn launch_;
  int32_t max_clusters_ = 1;
  SplitWorkspace split_ = split_workspace(cfg_, problem_);
};

class CuteBackend final : public Backend {
 public:
  std::string name() const override { return "cute"; }
  std::string version() const override { return version_string(); }
  std::string supports(const GemmProblem& p) const override { return unsupported_reason(p); }
  std::string doctor_note() const override { return jit::cute_dsl::doctor_note(); }

  std::vector<Candidate> candidates(const GemmProblem& p, const DeviceInfo& device,
                                    const SearchOptions& search) const override {
    std::vector<Candidate> out;
    if (search.alignment < 16) return out;  // every kernel is compiled for 16-byte pointers
    for (const auto& c : ranked_configs(p, device, search.level)) out.push_back({name(), c.name(), c.to_json()});
    if (search.top_k > 0 && out.size() > size_t(search.top_k)) out.resize(size_t(search.top_k));
    return out;
  }

  CompileReport compile(const GemmProblem& p, const Candidate& c, bool use_cache) const override {
    return compile_config(CuteConfig::from_json(c.config), p, use_cache).report;
  }

  std::unique_ptr<Kernel> build(const GemmProblem& p, const Candidate& c) const override {
    const CuteConfig cfg = CuteConfig::from_json(c.config);
    jit::PythonArtifact compiled = compile_config(cfg, p, /*use_cache=*/true);
    GF_CHECK(compiled.report.ok, "cute {} failed to compile:\n{}", c.name, compiled.report.log);
    return std::make_unique<CuteKernel>(cfg, p, compiled.bytes);
  }
};

}  // namespace

std::shared_ptr<Backend> make_backend() { return std::make_shared<CuteBackend>(); }

}  // namespace gf::cute_backend

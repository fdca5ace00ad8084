// The Triton backend: gemmforge's Triton templates compiled by Python workers to sm_90 cubins,
// loaded and launched from C++ with the Triton 3.6 kernel ABI (runtime arguments, then the
// global and profile scratch pointers; 32 x num_warps threads; num_ctas-wide clusters).
#include <fmt/format.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "backends/gemm/triton/python_env.hpp"
#include "backends/gemm/triton/space.hpp"
#include "backends/registry.hpp"
#include "core/hash.hpp"
#include "cuda/check.hpp"
#include "cuda/memory.hpp"
#include "cuda/module.hpp"
#include "gemmforge/error.hpp"
#include "store/kernel_cache.hpp"

namespace gf::triton_backend {
namespace {

// The launcher below passes exactly these, in this order.
const std::vector<std::string> kAbiArgs = {
    "a", "b", "d", "c", "bias", "M", "N", "K", "OUT_COLS", "alpha", "beta", "scale_a", "scale_b",
    "global_scratch", "profile_scratch"};

struct Compiled {
  CompileReport report;
  std::string cubin;
  nlohmann::json meta;
};

std::string cache_key(const TritonConfig& c, const nlohmann::json& request, const std::string& triton_version) {
  return "triton_" + c.name() + "-" + hex64(fnv1a(request.dump() + triton_version, fnv1a(python_env().sources_hash)));
}

Compiled compile_config(const TritonConfig& c, const GemmProblem& p, const std::string& triton_version,
                        bool use_cache) {
  Compiled out;
  auto start = std::chrono::steady_clock::now();
  nlohmann::json req = compile_request(c, p);
  const std::string key = cache_key(c, req, triton_version);
  if (use_cache) {
    if (auto hit = KernelCache::shared().get(key)) {
      out.cubin = std::move(hit->bytes);
      out.meta = nlohmann::json::parse(hit->meta, nullptr, false);
      out.report.cached = true;
      out.report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return out;
    }
  }
  const PythonEnv& env = python_env();
  GF_CHECK(env.error.empty(), "{}", env.error);
  GF_CHECK(env.triton_version == triton_version,
           "Triton is {} here but the candidate was listed under Triton {}: tune again", env.triton_version,
           triton_version);
  req["fresh"] = !use_cache;  // nor from Triton's own cache
  auto [reply, cubin] = compile_in_pool(req, key + ".triton.cubin", 300.0);
  out.report.seconds = reply.value("seconds", 0.0);
  if (!reply.value("ok", false)) {
    out.report.ok = false;
    out.report.log = reply.value("error", std::string("no reply")) + "\n" + reply.value("trace", std::string());
    return out;
  }
  out.cubin = std::move(cubin);
  GF_CHECK(!out.cubin.empty(), "the Triton worker wrote no cubin for {}", c.name());
  out.meta = reply;
  KernelCache::shared().put(key, out.cubin, reply.dump());
  return out;
}

class TritonKernel final : public Kernel {
 public:
  TritonKernel(const TritonConfig& c, const GemmProblem& p, const Compiled& compiled, const std::string& version)
      : cfg_(c),
        problem_(p),
        meta_(compiled.meta),
        module_(compiled.cubin),
        fn_(module_.function(meta_.at("name").get<std::string>().c_str())) {
    GF_CHECK(meta_.value("triton_version", "") == version, "cubin for {} was compiled by Triton {}, expected {}",
             c.name(), meta_.value("triton_version", ""), version);
    GF_CHECK(meta_.value("args", nlohmann::json::array()) == nlohmann::json(kAbiArgs),
             "Triton {} kernel ABI {} differs from the launcher's {}", version,
             meta_.value("args", nlohmann::json()).dump(), nlohmann::json(kAbiArgs).dump());
    GF_CHECK(!meta_.value("launch_cooperative_grid", false) && !meta_.value("launch_pdl", false),
             "Triton kernel {} wants cooperative or PDL launch, which the launcher does not do", c.name());
    shared_ = meta_.at("shared").get<unsigned>();
    if (shared_ > 48 * 1024) cuda::set_max_dynamic_smem(fn_, shared_);
    const int64_t tiles = num_tiles(c, p);
    grid_ = unsigned(c.tmpl == "mm" ? tiles : std::min<int64_t>(tiles, c.num_sms));
    num_ctas_ = meta_.value("num_ctas", 1);
    // Triton's scratch (device-built tensor maps of the TMA templates, profiling) is a slice of the
    // workspace per program: global scratch first, then profile scratch.
    const size_t programs = size_t(grid_) * size_t(num_ctas_);
    global_bytes_ = (size_t(meta_.value("global_scratch_size", int64_t(0))) * programs + 255) / 256 * 256;
    profile_bytes_ = size_t(meta_.value("profile_scratch_size", int64_t(0))) * programs;
  }

  size_t workspace_bytes() const override { return global_bytes_ + profile_bytes_; }
  size_t alignment() const override { return 16; }  // the kernel was specialised for it

  void launch(const GemmArgs& args, cudaStream_t stream) override {
    const GemmProblem& p = problem_;
    GF_CHECK(pointer_alignment(args) >= alignment(),
             "triton {}: operands must be 16-byte aligned (the kernel was specialised for it)", p.key());
    GF_CHECK(args.a && args.b && args.d, "triton {}: A, B and D must be non-null", p.key());
    GF_CHECK(args.workspace_bytes >= workspace_bytes(), "triton {}: needs {} bytes of workspace, got {}", p.key(),
             workspace_bytes(), args.workspace_bytes);
    void* a = const_cast<void*>(args.a);
    void* b = const_cast<void*>(args.b);
    void* d = args.d;
    void* c = const_cast<void*>(args.c);
    void* bias = const_cast<void*>(args.bias);
    void* scale_a = const_cast<float*>(args.scale_a);
    void* scale_b = const_cast<float*>(args.scale_b);
    GF_CHECK(p.epilogue.scale == ScaleKind::none || (scale_a && scale_b), "triton {}: scale_a and scale_b are needed",
             p.key());
    int m = int(p.m), n = int(p.n), k = int(p.k), out_cols = int(p.out_cols());
    float alpha = p.epilogue.alpha, beta = p.epilogue.beta;
    void* gs = global_bytes_ ? args.workspace : nullptr;
    void* ps = profile_bytes_ ? static_cast<char*>(args.workspace) + global_bytes_ : nullptr;
    void* params[] = {&a, &b, &d, &c, &bias, &m, &n, &k, &out_cols, &alpha, &beta, &scale_a, &scale_b, &gs, &ps};
    cuda::launch(fn_,
                 {.grid = {grid_ * unsigned(num_ctas_), 1, 1},
                  .block = {unsigned(32 * meta_.at("num_warps").get<int>()), 1, 1},
                  .smem_bytes = shared_,
                  .cluster = {unsigned(num_ctas_), 1, 1}},
                 params, stream);
  }

 private:
  TritonConfig cfg_;
  GemmProblem problem_;
  nlohmann::json meta_;
  cuda::Module module_;
  CUfunction fn_;
  unsigned grid_ = 0, shared_ = 0;
  int num_ctas_ = 1;
  size_t global_bytes_ = 0, profile_bytes_ = 0;
};

class TritonBackend final : public Backend {
 public:
  std::string name() const override { return "triton"; }
  std::string version() const override {
    const PythonEnv& env = python_env();
    return env.error.empty() ? env.triton_version : "none";
  }
  std::string unavailable() const override { return python_env().error; }
  std::string supports(const GemmProblem& p) const override { return unsupported_reason(p); }

  std::vector<Candidate> candidates(const GemmProblem& p, const DeviceInfo& device,
                                    const SearchOptions& search) const override {
    GF_CHECK(unavailable().empty(), "{}", unavailable());
    std::vector<Candidate> out;
    if (search.alignment < 16) return out;  // every kernel is specialised for 16-byte pointers
    for (const auto& c : ranked_configs(p, device, search.level)) {
      nlohmann::json cfg = c.to_json();
      cfg["triton_version"] = python_env().triton_version;
      out.push_back({name(), c.name(), cfg});
    }
    GF_CHECK(!out.empty(), "no Triton config fits {}", p.key());
    if (search.top_k > 0 && out.size() > size_t(search.top_k)) out.resize(size_t(search.top_k));
    return out;
  }

  CompileReport compile(const GemmProblem& p, const Candidate& c, bool use_cache) const override {
    return compile_config(TritonConfig::from_json(c.config), p, c.config.at("triton_version"), use_cache).report;
  }

  std::unique_ptr<Kernel> build(const GemmProblem& p, const Candidate& c) const override {
    const TritonConfig cfg = TritonConfig::from_json(c.config);
    const std::string version = c.config.at("triton_version");
    Compiled compiled = compile_config(cfg, p, version, /*use_cache=*/true);
    GF_CHECK(compiled.report.ok, "triton {} failed to compile:\n{}", c.name, compiled.report.log);
    return std::make_unique<TritonKernel>(cfg, p, compiled, version);
  }
};

}  // namespace

std::shared_ptr<Backend> make_backend() { return std::make_shared<TritonBackend>(); }

}  // namespace gf::triton_backend

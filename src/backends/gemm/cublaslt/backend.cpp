// The cuBLASLt backend: each algorithm cublasLtMatmulAlgoGetHeuristic returns is a candidate.
// The algorithm travels as its opaque bytes (hex) in the candidate's config; rank 0 is what
// cuBLASLt would pick by itself ("cuBLASLt's default").
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/gemm/cublaslt/matmul_plan.hpp"
#include "backends/registry.hpp"

namespace gf::cublaslt {
namespace {

std::string to_hex(const cublasLtMatmulAlgo_t& algo) {
  std::string s;
  for (uint64_t word : algo.data) s += fmt::format("{:016x}", word);
  return s;
}

cublasLtMatmulAlgo_t from_hex(const std::string& s) {
  GF_CHECK(s.size() == 8 * 16, "bad cuBLASLt algo in candidate config ({} hex digits)", s.size());
  cublasLtMatmulAlgo_t algo{};
  for (int i = 0; i < 8; ++i) algo.data[i] = std::stoull(s.substr(size_t(i) * 16, 16), nullptr, 16);
  return algo;
}

template <class T>
int64_t algo_attr(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T value{};
  size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof value, &written);
  return int64_t(value);
}

class CublasLtKernel final : public Kernel {
 public:
  CublasLtKernel(const GemmProblem& p, const cublasLtMatmulAlgo_t& algo, size_t workspace, size_t alignment,
                 bool fast_accum)
      : problem_(p),
        plan_(p, fast_accum),
        algo_(algo),
        workspace_(workspace),
        alignment_(alignment),
        fast_accum_(fast_accum) {}

  void launch(const GemmArgs& args, cudaStream_t stream) override {
    GF_CHECK(!plan_.has_bias || args.bias, "problem has a bias epilogue but no bias pointer was given");
    GF_CHECK(args.workspace_bytes >= workspace_, "cuBLASLt kernel needs {} bytes of workspace, got {}", workspace_,
             args.workspace_bytes);
    // Without a residual C is never read: it is D, or for an fp8 D (whose C descriptor is bf16)
    // none, since cuBLASLt takes C == D as in place and refuses the types' mismatch (status 7).
    GF_CHECK(plan_.beta == 0.0f || args.c, "problem has a residual (beta != 0) but no C pointer was given");
    const void* c = plan_.beta != 0.0f ? args.c : plan_.fp8_out ? nullptr : args.d;
    if (!plan_.has_pointers()) return matmul(plan_, args, c, stream);
    GF_CHECK(plan_.scale == ScaleKind::none || (args.scale_a && args.scale_b),
             "problem has fp8 scales but scale_a or scale_b is missing");
    GF_CHECK(!plan_.fp8_out || args.scale_d, "D is fp8 but its scale scale_d is missing");
    // The bias and scale pointers live in the descriptor: each launch the host has under way takes
    // a plan of its own, so that concurrent launches never share one.
    std::unique_ptr<MatmulPlan> plan = take_plan();
    auto set = [&](cublasLtMatmulDescAttributes_t attr, const void* ptr) {
      GF_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(plan->desc, attr, &ptr, sizeof ptr));
    };
    if (plan->has_bias) set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, args.bias);
    if (plan->scale != ScaleKind::none) {  // cuBLASLt's A is W (gemmforge's B), its B is X
      set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, args.scale_b);
      set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, args.scale_a);
    }
    if (plan->fp8_out) set(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, args.scale_d);
    matmul(*plan, args, c, stream);
    std::lock_guard lock(pool_mu_);
    pool_.push_back(std::move(plan));
  }
  size_t workspace_bytes() const override { return workspace_; }
  size_t alignment() const override { return alignment_; }

 private:
  void matmul(const MatmulPlan& plan, const GemmArgs& args, const void* c, cudaStream_t stream) const {
    GF_CUBLAS_CHECK(cublasLtMatmul(handle(), plan.desc, &plan.alpha, args.b, plan.a, args.a, plan.b, &plan.beta, c,
                                   plan.c, args.d, plan.d, &algo_, args.workspace, args.workspace_bytes, stream));
  }
  std::unique_ptr<MatmulPlan> take_plan() {
    {
      std::lock_guard lock(pool_mu_);
      if (!pool_.empty()) {
        auto plan = std::move(pool_.back());
        pool_.pop_back();
        return plan;
      }
    }
    return std::make_unique<MatmulPlan>(problem_, fast_accum_);
  }

  GemmProblem problem_;
  MatmulPlan plan_;
  cublasLtMatmulAlgo_t algo_;
  size_t workspace_, alignment_;
  bool fast_accum_;
  std::mutex pool_mu_;
  std::vector<std::unique_ptr<MatmulPlan>> pool_;  // plans with per-launch pointers, free for a launch
};

class CublasLtBackend final : public Backend {
 public:
  std::string name() const override { return "cublaslt"; }
  std::string version() const override {
    size_t v = cublasLtGetVersion();
    return fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
  }
  std::string supports(const GemmProblem& p) const override { return unsupported_reason(p); }

  std::vector<Candidate> candidates(const GemmProblem& p, const DeviceInfo& device,
                                    const SearchOptions& search) const override {
    GF_CHECK(device.present, "cuBLASLt lists its algorithms only on a GPU ({})", device.absent_reason);
    // Its algorithms cost no compile: at least its top 16 at every level, so that the baseline every
    // other backend is measured against is cuBLASLt at its best, not at its first guess.
    int top_k = search.top_k > 0 ? search.top_k : search.level == Search::exhaustive ? 64 : 16;
    std::vector<Candidate> out;
    // fp8: exact (promoted) accumulation and fast accumulation are candidates of their own.
    for (bool fast : is_fp8(p.a) ? std::vector<bool>{false, true} : std::vector<bool>{false})
      append_candidates(p, search, top_k, fast, out);
    GF_CHECK(!out.empty(), "cuBLASLt found no algorithm for {}", p.key());
    return out;
  }

  void append_candidates(const GemmProblem& p, const SearchOptions& search, int top_k, bool fast_accum,
                         std::vector<Candidate>& out) const {
    MatmulPlan plan(p, fast_accum);
    cublasLtMatmulPreference_t pref = nullptr;
    GF_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    size_t ws = kWorkspaceBytes;
    cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    // Algorithms for pointers of the caller's alignment (cuBLASLt assumes 256 bytes otherwise).
    const uint32_t alignment = uint32_t(std::min<size_t>(search.alignment, 256));
    for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
      cublasLtMatmulPreferenceSetAttribute(pref, attr, &alignment, sizeof alignment);
    std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(top_k));
    int found = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(handle(), plan.desc, plan.a, plan.b, plan.c, plan.d, pref, top_k,
                                                       results.data(), &found);
    cublasLtMatmulPreferenceDestroy(pref);
    // cuBLASLt 13.x on the H200 answers "not supported" for the VEC128 / BLK128x128 scale modes.
    GF_CHECK(!(st == CUBLAS_STATUS_NOT_SUPPORTED && p.epilogue.scale == ScaleKind::block128),
             "cuBLASLt {} has no block-scaled fp8 GEMM on this GPU (VEC128 / BLK128x128 scales): {}",
             cublasLtGetVersion(), p.key());
    GF_CUBLAS_CHECK(st);
    for (int i = 0; i < found; ++i) {
      const auto& r = results[size_t(i)];
      if (r.state != CUBLAS_STATUS_SUCCESS) continue;
      const cublasLtMatmulAlgo_t& a = r.algo;
      nlohmann::json cfg = {
          {"rank", i},
          {"algo_id", algo_attr<int32_t>(a, CUBLASLT_ALGO_CONFIG_ID)},
          {"tile", algo_attr<uint32_t>(a, CUBLASLT_ALGO_CONFIG_TILE_ID)},
          {"stages", algo_attr<uint32_t>(a, CUBLASLT_ALGO_CONFIG_STAGES_ID)},
          {"splitk", algo_attr<int32_t>(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM)},
          {"reduction", algo_attr<uint32_t>(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME)},
          {"swizzle", algo_attr<uint32_t>(a, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING)},
          {"custom", algo_attr<uint32_t>(a, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION)},
          {"cluster", algo_attr<uint16_t>(a, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID)},
          {"workspace", r.workspaceSize},
          {"waves", r.wavesCount},
          {"alignment", alignment},
          {"fast_accum", fast_accum},
          {"algo", to_hex(a)},
      };
      std::string name =
          fmt::format("r{:02}_algo{}_tile{}_st{}_sk{}_red{}_sw{}_cu{}_cl{}", i, cfg["algo_id"].get<int64_t>(),
                      cfg["tile"].get<int64_t>(), cfg["stages"].get<int64_t>(), cfg["splitk"].get<int64_t>(),
                      cfg["reduction"].get<int64_t>(), cfg["swizzle"].get<int64_t>(), cfg["custom"].get<int64_t>(),
                      cfg["cluster"].get<int64_t>());
      if (alignment < 256) name += fmt::format("_al{}", alignment);
      if (fast_accum) name += "_fa";
      out.push_back({this->name(), name, std::move(cfg)});
    }
  }

  std::unique_ptr<Kernel> build(const GemmProblem& p, const Candidate& c) const override {
    return std::make_unique<CublasLtKernel>(
        p, from_hex(c.config.at("algo").get<std::string>()), c.config.value("workspace", size_t(0)),
        c.config.value("alignment", size_t(256)), c.config.value("fast_accum", false));
  }
};

}  // namespace

std::shared_ptr<Backend> make_backend() { return std::make_shared<CublasLtBackend>(); }

}  // namespace gf::cublaslt

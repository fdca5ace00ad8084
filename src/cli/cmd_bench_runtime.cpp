// gemmforge bench-runtime: the host time one gf::Runtime::gemm call costs over a bare
// cublasLtMatmul with the same algorithm, and each backend's dispatch over its kernel's bare launch
// (-b; the CuTe DSL's host launcher is the one to watch at decode sizes).
// Bursts short enough never to fill the launch queue, so each call's time is its enqueue.
#include <cublasLt.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "backends/gemm/cublaslt/matmul_plan.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/strings.hpp"
#include "cuda/memory.hpp"
#include "gemmforge/runtime.hpp"
#include "gemmforge/tuning_db.hpp"

namespace gf::cli {
namespace {

struct Options {
  std::string problem = "16x4096x4096:bf16";
  int rounds = 40;
  int calls = 200;                  // a burst: well inside the launch queue
  std::string backends = "native";  // each: a bare launch and a runtime that dispatches to it
  std::string json_path;
};

void run_bench_runtime(const Options& o) {
  const DeviceInfo device = DeviceInfo::query();
  GF_CHECK(device.present, "bench-runtime needs a GPU: {}", device.absent_reason);
  const GemmProblem p = GemmProblem::parse(o.problem);
  GF_CHECK(p.epilogue.is_identity() && p.batch == 1, "bench-runtime takes a plain GEMM (no epilogue, batch 1)");
  cuda::DeviceBuffer a(size_t(p.m * p.k) * 2), b(size_t(p.n * p.k) * 2), d(size_t(p.m * p.n) * 2);
  cuda::DeviceBuffer workspace(cublaslt::kWorkspaceBytes);
  GF_CUDA_CHECK(cudaMemset(a.get(), 0, a.bytes()));
  GF_CUDA_CHECK(cudaMemset(b.get(), 0, b.bytes()));
  cuda::Stream stream;
  const GemmArgs args{.a = a.get(), .b = b.get(), .d = d.get()};

  // The bare call: cuBLASLt's rank-0 algorithm, descriptors made once.
  cublaslt::MatmulPlan plan(p);
  cublasLtMatmulPreference_t pref = nullptr;
  GF_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  size_t ws = workspace.bytes();
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  GF_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(cublaslt::handle(), plan.desc, plan.a, plan.b, plan.c, plan.d, pref, 1,
                                                 &heuristic, &found));
  cublasLtMatmulPreferenceDestroy(pref);
  GF_CHECK(found == 1, "cuBLASLt has no algorithm for {}", p.key());

  const auto dir = std::filesystem::temp_directory_path() / fmt::format("gemmforge-bench-runtime-{}", getpid());
  std::filesystem::remove_all(dir);
  struct Mode {
    std::string name;
    std::function<void()> call;
    std::vector<double> us;  // per call, a value per round
  };
  Runtime on_cublaslt({.db_path = dir / "empty.db"});  // no decision: cuBLASLt's rank 0, as above
  std::vector<Mode> modes = {
      {"cublasLtMatmul (bare)",
       [&] {
         GF_CUBLAS_CHECK(cublasLtMatmul(cublaslt::handle(), plan.desc, &plan.alpha, b.get(), plan.a, a.get(), plan.b,
                                        &plan.beta, d.get(), plan.c, d.get(), plan.d, &heuristic.algo, workspace.get(),
                                        workspace.bytes(), stream.get()));
       }},
      {"Runtime::gemm -> cuBLASLt", [&] { on_cublaslt.gemm(p, args, stream.get()); }},
  };
  // Each other backend: its first fast-search kernel launched bare, and a runtime whose DB holds it.
  struct Dispatched {
    std::unique_ptr<Kernel> kernel;
    cuda::DeviceBuffer workspace;
    GemmArgs args;
    std::unique_ptr<Runtime> runtime;
  };
  std::vector<std::unique_ptr<Dispatched>> dispatched;
  for (std::string_view name_view : split(o.backends, ',')) {
    const std::string name(name_view);
    auto backend = find_backend<GemmProblem>(name);
    GF_CHECK(backend, "unknown GEMM backend '{}'", name);
    const auto cands = backend->candidates(p, device, {.level = Search::fast, .top_k = 1});
    GF_CHECK(!cands.empty(), "{} has no candidate for {}", name, p.key());
    const Candidate& c = cands.front();
    const auto db_path = dir / (name + ".db");
    {
      TuningDb db(db_path, device.fingerprint());
      db.store({.problem = p.key(),
                .family = "gemm",
                .backend = name,
                .backend_version = backend->version(),
                .candidate = c.name,
                .config = c.config},
               {});
    }
    auto& x = *dispatched.emplace_back(std::make_unique<Dispatched>());
    x.kernel = backend->build(p, c);
    x.workspace = cuda::DeviceBuffer(std::max<size_t>(x.kernel->workspace_bytes(), 16));
    GF_CUDA_CHECK(cudaMemset(x.workspace.get(), 0, x.workspace.bytes()));
    x.args = args;
    x.args.workspace = x.workspace.get();
    x.args.workspace_bytes = x.workspace.bytes();
    x.runtime = std::make_unique<Runtime>(RuntimeOptions{.db_path = db_path});
    modes.push_back(
        {fmt::format("{} launch (bare, {})", name, c.name), [&x, &stream] { x.kernel->launch(x.args, stream.get()); }});
    modes.push_back({"Runtime::gemm -> " + name, [&x, &p, &args, &stream] { x.runtime->gemm(p, args, stream.get()); }});
  }
  for (auto& m : modes) m.call();  // builds, first-use allocations
  stream.sync();
  for (int r = -2; r < o.rounds; ++r) {  // two rounds of warm-up
    for (auto& m : modes) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < o.calls; ++i) m.call();
      const auto t1 = std::chrono::steady_clock::now();
      stream.sync();
      if (r >= 0) m.us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / o.calls);
    }
  }
  std::filesystem::remove_all(dir);

  // Each runtime mode against the bare mode before it, paired by round.
  nlohmann::json out = {{"problem", p.key()},
                        {"device", device.describe()},
                        {"rounds", o.rounds},
                        {"calls_per_round", o.calls},
                        {"modes", nlohmann::json::array()}};
  fmt::print("host time per call, {} ({} rounds of {} calls)\n", p.key(), o.rounds, o.calls);
  fmt::print("{:<28} {:>9} {:>18} {:>14} {:>18}\n", "call", "median us", "[p10, p90]", "over bare us", "[p10, p90]");
  for (size_t i = 0; i < modes.size(); ++i) {
    const Mode& m = modes[i];
    nlohmann::json row = {{"name", m.name},
                          {"median_us", quantile(m.us, 0.5)},
                          {"p10_us", quantile(m.us, 0.1)},
                          {"p90_us", quantile(m.us, 0.9)},
                          {"round_us", m.us}};
    std::string over = "", spread = "";
    if (i % 2 == 1) {
      std::vector<double> diff;
      for (size_t r = 0; r < m.us.size(); ++r) diff.push_back(m.us[r] - modes[i - 1].us[r]);
      row["over_bare_us"] = quantile(diff, 0.5);
      row["over_bare_p10_us"] = quantile(diff, 0.1);
      row["over_bare_p90_us"] = quantile(diff, 0.9);
      over = fmt::format("{:.2f}", quantile(diff, 0.5));
      spread = fmt::format("[{:.2f}, {:.2f}]", quantile(diff, 0.1), quantile(diff, 0.9));
    }
    fmt::print("{:<28} {:>9.2f} {:>18} {:>14} {:>18}\n", m.name, quantile(m.us, 0.5),
               fmt::format("[{:.2f}, {:.2f}]", quantile(m.us, 0.1), quantile(m.us, 0.9)), over, spread);
    out["modes"].push_back(std::move(row));
  }
  if (!o.json_path.empty()) write_json(o.json_path, out);
}

}  // namespace

void add_bench_runtime(CLI::App& app) {
  auto opts = std::make_shared<Options>();
  auto* cmd = app.add_subcommand("bench-runtime",
                                 "host time a gf::Runtime::gemm call costs over a bare cuBLASLt call and a bare "
                                 "launch of each backend's kernel");
  cmd->add_option("-p,--problem", opts->problem, "a plain GEMM, MxNxK[:dtype]")->capture_default_str();
  cmd->add_option("--rounds", opts->rounds, "rounds, each mode once a round")
      ->capture_default_str()
      ->check(CLI::Range(3, 100000));
  cmd->add_option("--calls", opts->calls, "calls a round")->capture_default_str()->check(CLI::Range(1, 1000));
  cmd->add_option("-b,--backends", opts->backends, "backends whose bare launch and dispatch to time, comma-separated")
      ->capture_default_str();
  cmd->add_option("--json", opts->json_path, "write the figures here");
  cmd->callback([opts] { run_bench_runtime(*opts); });
}

}  // namespace gf::cli

// gemmforge bench-chain: a decoder layer's GEMMs (qkv, o + residual, gate_up + SwiGLU, down +
// residual) launched back to back, as a serving loop runs them: cuBLASLt's own picks, native
// kernels, and the same native kernels with programmatic dependent launch (each kernel's prologue
// and first weight tiles overlapping the one before's tail). Time per chain, median of rounds.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>

#include "backends/gemm/cublaslt/matmul_plan.hpp"
#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "cuda/memory.hpp"
#include "gemmforge/tuning_db.hpp"
#include "gemmforge/workloads.hpp"
#include "harness/fill.hpp"

namespace gf::cli {
namespace {

struct ChainOptions {
  std::string model = "llama3-8b";
  int64_t tokens = 16;
  int rounds = 21;
  int chains = 20;  // back to back in a round
  std::string json_path;
};

// One GEMM of the chain: its operands, and a kernel of each backend with its workspace.
struct Link {
  GemmProblem problem;
  cuda::DeviceBuffer a, b, c, d;
  std::unique_ptr<Kernel> cublaslt, native;
  std::string native_name;
  cuda::DeviceBuffer cublaslt_ws, native_ws;

  GemmArgs args(bool native_kernel, bool pdl, bool prefetch, PdlTrigger trigger) const {
    const cuda::DeviceBuffer& ws = native_kernel ? native_ws : cublaslt_ws;
    GemmArgs g{.a = a.get(), .b = b.get(), .d = d.get(), .c = c.get()};
    g.workspace = ws.get();
    g.workspace_bytes = ws.bytes();
    g.pdl = pdl;
    g.pdl_prefetch = prefetch;
    g.pdl_trigger = trigger;
    return g;
  }
};

// The native kernel of the DB's decision where it chose native, else native's first-ranked one.
Candidate native_choice(const GemmProblem& p, const DeviceInfo& device, TuningDb& db) {
  auto native = find_backend<GemmProblem>("native");
  if (auto d = db.decision(p.key()); d && d->backend == "native" && d->backend_version == native->version())
    return {"native", d->candidate, d->config};
  return native->candidates(p, device, {.level = Search::fast, .top_k = 1}).front();
}

void run_bench_chain(const ChainOptions& o, const std::string& db_path) {
  const DeviceInfo device = DeviceInfo::query();
  GF_CHECK(device.present, "bench-chain needs a GPU: {}", device.absent_reason);
  auto db = TuningDb::open(db_path, device.fingerprint());
  cuda::Stream stream;
  std::vector<std::unique_ptr<Link>> chain;
  auto lt = find_backend<GemmProblem>("cublaslt");
  auto native = find_backend<GemmProblem>("native");
  uint64_t seed = 1;
  for (const ModelGemm& g : model_gemms(load_model(o.model), {o.tokens}, DType::bf16, Fuse::natural)) {
    if (g.name == "lm_head") continue;  // once a step, not a layer
    auto link = std::make_unique<Link>();
    Link& l = *link;
    const GemmProblem& p = l.problem = g.problem;
    GF_CHECK(p.epilogue.bias == BiasKind::none, "bench-chain: {} has a bias; the chain leaves biases out", p.key());
    l.a = cuda::DeviceBuffer(size_t(p.m * p.k) * 2);
    l.b = cuda::DeviceBuffer(size_t(p.n * p.k) * 2);
    l.d = cuda::DeviceBuffer(size_t(p.m * p.n) * 2);  // cuBLASLt's plain gate_up writes all N columns
    harness::fill_uniform(l.a.get(), DType::bf16, p.m * p.k, seed++, -1.0f, 1.0f, stream.get());
    harness::fill_uniform(l.b.get(), DType::bf16, p.n * p.k, seed++, -0.05f, 0.05f, stream.get());
    if (p.epilogue.has_c()) {
      l.c = cuda::DeviceBuffer(size_t(p.m * p.out_cols()) * 2);
      harness::fill_uniform(l.c.get(), DType::bf16, p.m * p.out_cols(), seed++, -1.0f, 1.0f, stream.get());
    }
    // cuBLASLt has no SwiGLU epilogue: its chain runs the plain gate_up GEMM there (no gate kernel),
    // which favours it.
    GemmProblem lt_problem = p;
    if (!lt->supports(p).empty()) lt_problem.epilogue.gate = GateKind::none;
    l.cublaslt = lt->build(lt_problem, lt->candidates(lt_problem, device, {.level = Search::fast, .top_k = 1}).front());
    l.cublaslt_ws = cuda::DeviceBuffer(std::max<size_t>(l.cublaslt->workspace_bytes(), cublaslt::kWorkspaceBytes));
    const Candidate nc = native_choice(p, device, *db);
    l.native_name = nc.name;
    l.native = native->build(p, nc);
    l.native_ws = cuda::DeviceBuffer(std::max<size_t>(l.native->workspace_bytes(), 16));
    GF_CUDA_CHECK(cudaMemsetAsync(l.native_ws.get(), 0, l.native_ws.bytes(), stream.get()));
    chain.push_back(std::move(link));
  }
  struct Mode {
    std::string name;
    bool native, pdl, prefetch;
    PdlTrigger trigger;
    std::vector<double> us;  // per chain, a value per round
  };
  // PDL with and without the weights' L2 prefetch before the dependency wait (which part of
  // PDL's effect is the early start and which the prefetch), and with the next kernel let in at
  // the start or at exit rather than after the last load (too early competes for the SMs and
  // DRAM, too late hides nothing).
  std::vector<Mode> modes = {{"cuBLASLt (its own picks)", false, false, false, PdlTrigger::at_exit, {}},
                             {"native", true, false, false, PdlTrigger::at_exit, {}},
                             {"native + PDL", true, true, true, PdlTrigger::after_loads, {}},
                             {"native + PDL, no prefetch", true, true, false, PdlTrigger::after_loads, {}},
                             {"native + PDL, trigger at start", true, true, true, PdlTrigger::at_start, {}},
                             {"native + PDL, trigger at exit", true, true, true, PdlTrigger::at_exit, {}}};
  auto run_chain = [&](const Mode& m) {
    for (const auto& l : chain)
      (m.native ? l->native : l->cublaslt)->launch(l->args(m.native, m.pdl, m.prefetch, m.trigger), stream.get());
  };

  // PDL changes when a kernel starts, never what it computes: the chain's outputs (bf16, poisoned
  // with NaN first) match, up to the order in which a split-K reduction adds 3 or more slices.
  auto outputs = [&](const Mode& m) {
    for (const auto& l : chain) GF_CUDA_CHECK(cudaMemsetAsync(l->d.get(), 0xff, l->d.bytes(), stream.get()));
    run_chain(m);
    stream.sync();
    std::vector<float> out;
    for (const auto& l : chain) {  // the native kernels' D: M x out_cols (N/2 for gate_up)
      std::vector<uint16_t> bits(size_t(l->problem.m * l->problem.out_cols()));
      GF_CUDA_CHECK(cudaMemcpy(bits.data(), l->d.get(), bits.size() * 2, cudaMemcpyDeviceToHost));
      for (uint16_t b : bits) out.push_back(std::bit_cast<float>(uint32_t(b) << 16));
    }
    return out;
  };
  const std::vector<float> plain = outputs(modes[1]), overlapped = outputs(modes[2]);
  double err2 = 0, ref2 = 0;
  for (size_t i = 0; i < plain.size(); ++i) {
    err2 += double(overlapped[i] - plain[i]) * double(overlapped[i] - plain[i]);
    ref2 += double(plain[i]) * double(plain[i]);
  }
  const double pdl_rel_err = std::sqrt(err2 / std::max(ref2, 1e-30));
  const bool pdl_matches = pdl_rel_err < 1e-2;  // NaN (a kernel that never wrote) fails too

  // About 100 ms of chains first (the clocks' boost after idling), then interleaved rounds.
  cuda::Event start, stop;
  for (double warmed_ms = 0; warmed_ms < 100;) {
    start.record(stream.get());
    for (const Mode& m : modes) run_chain(m);
    stop.record(stream.get());
    stream.sync();
    warmed_ms += stop.since(start);
  }
  std::mt19937 shuffle(7);
  std::vector<size_t> order(modes.size());
  std::iota(order.begin(), order.end(), size_t(0));
  for (int r = 0; r < o.rounds; ++r) {
    std::shuffle(order.begin(), order.end(), shuffle);
    for (size_t i : order) {
      start.record(stream.get());
      for (int c = 0; c < o.chains; ++c) run_chain(modes[i]);
      stop.record(stream.get());
      stream.sync();
      modes[i].us.push_back(1000.0 * stop.since(start) / o.chains);
    }
  }

  nlohmann::json out = {{"model", o.model},
                        {"tokens", o.tokens},
                        {"device", device.describe()},
                        {"rounds", o.rounds},
                        {"chains_per_round", o.chains},
                        {"pdl_matches", pdl_matches},
                        {"pdl_rel_err", pdl_rel_err},
                        {"gemms", nlohmann::json::array()},
                        {"modes", nlohmann::json::array()}};
  fmt::print("{} at {} tokens: {} GEMMs back to back ({} rounds of {} chains)\n", o.model, o.tokens, chain.size(),
             o.rounds, o.chains);
  for (const auto& l : chain) {
    fmt::print("  {:<36} native {}\n", l->problem.key(), l->native_name);
    out["gemms"].push_back({{"problem", l->problem.key()}, {"native", l->native_name}});
  }
  fmt::print("{:<26} {:>12} {:>18} {:>14}\n", "chain", "median us", "[p10, p90]", "vs cuBLASLt");
  const double base = quantile(modes[0].us, 0.5);
  for (const Mode& m : modes) {
    const double med = quantile(m.us, 0.5);
    fmt::print("{:<26} {:>12.2f} {:>18} {:>13.3f}x\n", m.name, med,
               fmt::format("[{:.2f}, {:.2f}]", quantile(m.us, 0.1), quantile(m.us, 0.9)), base / med);
    out["modes"].push_back({{"name", m.name},
                            {"median_us", med},
                            {"p10_us", quantile(m.us, 0.1)},
                            {"p90_us", quantile(m.us, 0.9)},
                            {"round_us", m.us}});
  }
  // The saving, paired by round; and the prefetch's share of it.
  std::vector<double> saved, prefetch_saved;
  for (int r = 0; r < o.rounds; ++r) {
    saved.push_back(modes[1].us[size_t(r)] - modes[2].us[size_t(r)]);
    prefetch_saved.push_back(modes[3].us[size_t(r)] - modes[2].us[size_t(r)]);
  }
  out["pdl_saving_us"] = quantile(saved, 0.5);
  out["prefetch_saving_us"] = quantile(prefetch_saved, 0.5);
  fmt::print("PDL saves {:.2f} us a chain [p10 {:.2f}, p90 {:.2f}]; its outputs {} the plain launches'\n",
             quantile(saved, 0.5), quantile(saved, 0.1), quantile(saved, 0.9), pdl_matches ? "match" : "DIFFER FROM");
  fmt::print("of which the weights' L2 prefetch saves {:.2f} us [p10 {:.2f}, p90 {:.2f}]\n",
             quantile(prefetch_saved, 0.5), quantile(prefetch_saved, 0.1), quantile(prefetch_saved, 0.9));
  if (!o.json_path.empty()) write_json(o.json_path, out);
  GF_CHECK(pdl_matches, "the chain with PDL computed other values than without it");
}

}  // namespace

void add_bench_chain(CLI::App& app) {
  auto opts = std::make_shared<ChainOptions>();
  auto db = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("bench-chain",
                                 "a decoder layer's GEMMs back to back: cuBLASLt, native, native with programmatic "
                                 "dependent launch");
  cmd->add_option("-m,--model", opts->model, "a shipped model or a config.json")->capture_default_str();
  cmd->add_option("--tokens", opts->tokens, "tokens (M)")->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--rounds", opts->rounds, "rounds, each chain kind once a round")
      ->capture_default_str()
      ->check(CLI::Range(3, 100000));
  cmd->add_option("--chains", opts->chains, "chains back to back a round")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  cmd->add_option("--db", *db, "the tuning DB whose native decisions to use (default: GEMMFORGE_DB or the default)");
  cmd->add_option("--json", opts->json_path, "write the figures here");
  cmd->callback([opts, db] { run_bench_chain(*opts, *db); });
}

}  // namespace gf::cli

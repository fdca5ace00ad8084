// gemmforge tune / bench: tune problems of either family into the DB; time each backend's best
// GEMM kernel side by side.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <set>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "gemmforge/error.hpp"
#include "tune/fleet.hpp"

namespace gf::cli {
namespace {

// Every candidate timed in this run, for comparing search efforts and studying the space.
nlohmann::json candidate_rows(const std::vector<Measurement>& ms) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& m : ms)
    rows.push_back({{"backend", m.backend},
                    {"candidate", m.candidate},
                    {"us", m.us},
                    {"rate", m.rate},
                    {"verified", m.verified},
                    {"compile_seconds", m.compile_seconds},
                    {"error", m.error}});
  return rows;
}

// The problems of --shard i/n (all without it), in their order.
template <class T, class KeyOf>
void keep_shard(std::vector<T>& list, const std::set<std::string>& mine, KeyOf key_of) {
  std::erase_if(list, [&](const T& x) { return !mine.count(key_of(x)); });
}

void run_tune(const TuneArgs& a) {
  auto gemms = a.problems.resolve();
  auto ops = a.problems.resolve_ops();
  auto gemm_key = [](const LabeledProblem& p) { return p.problem.key(); };
  auto op_key = [](const RowOpSpec& s) { return s.key(); };
  std::vector<std::string> keys;
  for (const auto& p : gemms) keys.push_back(gemm_key(p));
  for (const auto& s : ops) keys.push_back(op_key(s));
  if (!a.shard.empty()) {
    const tune::Shard shard = tune::Shard::parse(a.shard);
    const size_t all = std::set<std::string>(keys.begin(), keys.end()).size();
    keys = tune::shard_keys(keys, shard);
    const std::set<std::string> mine(keys.begin(), keys.end());
    keep_shard(gemms, mine, gemm_key);
    keep_shard(ops, mine, op_key);
    fmt::print(stderr, "shard {}/{}: {} of {} problems\n", shard.index, shard.count, keys.size(), all);
  }
  if (!a.gpus.empty()) return tune_on_gpus(a, keys);
  const size_t total = gemms.size() + ops.size();
  Progress progress;
  auto tuner = make_tuner(a, progress);
  auto start = std::chrono::steady_clock::now();
  Table table({"problem", "key", "backend", "candidate", "us", "rate", "source", "seconds"});
  nlohmann::json out = nlohmann::json::array();
  int hits = 0;
  size_t done = 0;
  auto tune_one = [&](const std::string& label, const auto& problem) {
    using Problem = std::decay_t<decltype(problem)>;
    progress.update(fmt::format("{} ({}/{})", label, done + 1, total), int(done), int(total));
    TuneResult r = tuner->tune(problem);
    ++done;
    hits += r.from_db;
    const Decision& d = r.decision;
    table.add({label, d.problem, d.backend, d.candidate, fixed(d.us, 1),
               fmt::format("{} {}", fixed(d.rate, 1), Problem::kRateUnit), r.from_db ? "db" : "tuned",
               fixed(r.seconds, 2)});
    out.push_back({{"label", label},
                   {"family", Problem::kFamily},
                   {"problem", d.problem},
                   {"backend", d.backend},
                   {"candidate", d.candidate},
                   {"config", d.config},
                   {"us", d.us},
                   {"rate", d.rate},
                   {"search", d.search},
                   {"from_db", r.from_db},
                   {"seconds", r.seconds},
                   {"compile_seconds", r.compile_seconds},
                   {"verify_seconds", r.verify_seconds},
                   {"race_seconds", r.race_seconds},
                   {"alone_us", r.alone_us},
                   {"skipped", r.skipped},
                   {"failed", std::count_if(r.measurements.begin(), r.measurements.end(),
                                            [](const Measurement& m) { return !m.verified; })},
                   {"candidates", candidate_rows(r.measurements)}});
    if (!a.json.empty()) write_json(a.json, out);  // after each problem: a run cut short keeps them
  };
  // All queued for compiling, in order, before the first is measured.
  for (const auto& g : gemms) tuner->prefetch(g.problem);
  for (const auto& op : ops) tuner->prefetch(op);
  for (const auto& g : gemms) tune_one(g.label, g.problem);
  for (const auto& op : ops) tune_one(op.key(), op);
  progress.finish();
  table.print();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{} problems: {} tuned, {} from the DB ({}; {}), {:.2f} s\n", total, int(total) - hits, hits,
             tuner->db().device(), tuner->db().describe(), seconds);
}

// Up to this many rows a GEMM streams its weights: bench times a copy of its bytes beside it, the
// ceiling its kernels are judged against (a copy of 33 MB is slower than the large-buffer figure).
constexpr int64_t kStreamingM = 128;

// What a bench reports: the table, the JSON rows, and the chosen kernels' speed over cuBLASLt's default.
struct BenchReport {
  Table table{
      {"problem", "backend", "candidate", "us", "TFLOP/s", "graph us", "vs cuBLASLt default", "vs eager", "chosen"}};
  nlohmann::json rows = nlohmann::json::array();
  double log_speedup = 0;
  int counted = 0;

  // One problem's rows; `group` numbers the problems timed in the same rounds (paired by round).
  void add(const std::string& label, const GemmProblem& problem, const BenchResult& bench, size_t group, Tuner& tuner) {
    double default_us = 0, eager_us = 0, chosen_us = 0;
    for (const auto& r : bench.rows) {
      if (!r.measurement.verified) continue;
      if (r.backend == "cublaslt-default") default_us = r.measurement.us;
      if (r.backend == "eager") eager_us = r.measurement.us;
      if (r.chosen) chosen_us = r.measurement.us;
    }
    auto speedup = [](double base, double us) { return base > 0 && us > 0 ? fixed(base / us, 2) + "x" : "-"; };
    for (const auto& r : bench.rows) {
      const Measurement& m = r.measurement;
      table.add({label, r.backend, r.candidate.name, m.verified ? fixed(m.us, 1) : "failed",
                 m.verified ? fixed(m.rate, 1) : m.error.substr(0, 60), m.graph_us > 0 ? fixed(m.graph_us, 1) : "-",
                 speedup(default_us, m.us), speedup(eager_us, m.us), r.chosen ? "*" : ""});
      rows.push_back({{"label", label},
                      {"problem", problem.key()},
                      {"group", group},
                      {"backend", r.backend},
                      {"candidate", r.candidate.name},
                      {"us", m.us},
                      {"round_us", r.round_us},
                      {"graph_us", m.graph_us},
                      {"round_graph_us", r.round_graph_us},
                      {"tflops", m.rate},
                      {"chosen", r.chosen},
                      {"verified", m.verified},
                      {"search", bench.tuned.decision.search},
                      {"error", m.error}});
    }
    if (problem.m <= kStreamingM) {
      const auto [copy_us, copy_graph_us] = tuner.copy_us(size_t(problem.min_bytes()));
      const std::string what = fmt::format("{:.1f} MB", problem.min_bytes() / 1e6);
      table.add({label, "copy", what, fixed(copy_us, 1), "-", fixed(copy_graph_us, 1), "", "", ""});
      rows.push_back({{"label", label},
                      {"problem", problem.key()},
                      {"backend", "copy"},
                      {"candidate", what},
                      {"us", copy_us},
                      {"graph_us", copy_graph_us},
                      {"bytes", problem.min_bytes()},
                      {"verified", true}});
    }
    if (default_us > 0 && chosen_us > 0) {
      log_speedup += std::log(default_us / chosen_us);
      ++counted;
    }
  }
};

// The problems in groups timed in the same rounds: those that differ only in their epilogue (fp8
// scales kept: they are part of the product), so that a fused GEMM and its plain one compare under
// one clock. Groups in the order of their first problem.
std::vector<std::vector<size_t>> bench_groups(const std::vector<LabeledProblem>& problems) {
  std::vector<std::vector<size_t>> groups;
  std::map<std::string, size_t> group_of;
  for (size_t i = 0; i < problems.size(); ++i) {
    GemmProblem plain = problems[i].problem;
    plain.epilogue = {.scale = plain.epilogue.scale};
    auto [it, added] = group_of.try_emplace(plain.key(), groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  return groups;
}

void run_bench(const TuneArgs& a) {
  auto problems = a.problems.resolve();
  Progress progress;
  auto tuner = make_tuner(a, progress);
  BenchReport report;
  const auto groups = bench_groups(problems);
  for (const auto& group : groups)
    for (size_t i : group) tuner->prefetch(problems[i].problem);  // compiled in order, ahead of measuring
  size_t done = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    std::vector<GemmProblem> members;
    for (size_t i : groups[g]) members.push_back(problems[i].problem);
    progress.update(fmt::format("{} ({}/{})", problems[groups[g].front()].label, done + 1, problems.size()), int(done),
                    int(problems.size()));
    const std::vector<BenchResult> benches = tuner->bench(members);
    for (size_t j = 0; j < members.size(); ++j, ++done)
      report.add(problems[groups[g][j]].label, members[j], benches[j], g, *tuner);
    if (!a.json.empty()) write_json(a.json, report.rows);
  }
  progress.finish();
  report.table.print();
  if (report.counted)
    fmt::print("chosen vs cuBLASLt default: geomean {:.3f}x over {} problems\n",
               std::exp(report.log_speedup / report.counted), report.counted);
}

}  // namespace

void add_tune(CLI::App& app) {
  auto a = std::make_shared<TuneArgs>();
  auto* cmd = app.add_subcommand(
      "tune", "tune GEMMs (default: llama3-8b at 16, 128, 4096 tokens) and row ops (-o) into the DB");
  a->add_to(cmd, /*with_ops=*/true);
  a->add_selection(cmd);
  a->add_fleet(cmd);
  cmd->callback([a] { run_tune(*a); });
}

void add_bench(CLI::App& app) {
  auto a = std::make_shared<TuneArgs>();
  auto* cmd = app.add_subcommand("bench", "time each backend's best, the choice and cuBLASLt's default side by side");
  a->add_to(cmd, /*with_ops=*/false);
  a->add_selection(cmd);
  a->add_rounds(cmd);
  cmd->callback([a] { run_bench(*a); });
}

}  // namespace gf::cli

// gemmforge tune / bench: tune problems into the DB; time each backend's best side by side.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <iostream>
#include <memory>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/strings.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/tuner.hpp"

namespace gf::cli {
namespace {

struct TuneArgs {
  ProblemArgs problems;
  std::string backends;
  std::string search = "default";
  int top_k = 0;
  bool force = false;
  std::string only;
  double timeout_s = 60;
  int rounds = 3;
  std::string db;
  std::string json;
};

void add_common(CLI::App* cmd, TuneArgs& a) {
  a.problems.add_to(*cmd);
  cmd->add_option("-b,--backends", a.backends, "comma-separated backends (default: all available)");
  cmd->add_option("-s,--search", a.search, "search effort: fast, default, exhaustive")->capture_default_str();
  cmd->add_option("--top-k", a.top_k, "cuBLASLt heuristic algorithms to try (default: by --search)");
  cmd->add_option("--timeout", a.timeout_s, "seconds one candidate may take in the worker")->capture_default_str();
  cmd->add_option("--db", a.db, "tuning DB path (default: ~/.cache/gemmforge/tuning.db)");
  cmd->add_option("--json", a.json, "also write the results as JSON to FILE");
}

std::unique_ptr<Tuner> make_tuner(const TuneArgs& a, Progress& progress) {
  TuneOptions o;
  o.backends = split_list(a.backends, "--backends", true);
  o.search = {parse_search(a.search), a.top_k};
  o.force = a.force;
  o.only = a.only;
  o.candidate_timeout_s = a.timeout_s;
  o.bench_rounds = a.rounds;
  o.db_path = a.db;
  o.progress = [&progress](const std::string& what, int done, int total) { progress.update(what, done, total); };
  DeviceInfo device = DeviceInfo::query();
  GF_CHECK(device.present,
           "no GPU found: {}.\nWithout a GPU these still work: gemmforge candidates (list a problem's candidates), "
           "gemmforge compile (compile them), gemmforge doctor.",
           device.absent_reason);
  return std::make_unique<Tuner>(std::move(o));
}

// Every candidate timed in this run, for comparing search efforts and studying the space.
nlohmann::json candidate_rows(const std::vector<Measurement>& ms) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& m : ms)
    rows.push_back({{"backend", m.backend},
                    {"candidate", m.candidate},
                    {"us", m.us},
                    {"verified", m.verified},
                    {"compile_seconds", m.compile_seconds},
                    {"error", m.error}});
  return rows;
}

void run_tune(const TuneArgs& a) {
  auto problems = a.problems.resolve();
  Progress progress;
  auto tuner = make_tuner(a, progress);
  auto start = std::chrono::steady_clock::now();
  Table table({"problem", "key", "backend", "candidate", "us", "TFLOP/s", "source", "seconds"});
  nlohmann::json out = nlohmann::json::array();
  int hits = 0;
  for (size_t i = 0; i < problems.size(); ++i) {
    const auto& [label, problem] = problems[i];
    progress.update(fmt::format("{} ({}/{})", label, i + 1, problems.size()), int(i), int(problems.size()));
    TuneResult r = tuner->tune(problem);
    hits += r.from_db;
    const Decision& d = r.decision;
    table.add({label, d.problem, d.backend, d.candidate, fixed(d.us, 1), fixed(d.tflops, 1), r.from_db ? "db" : "tuned",
               fixed(r.seconds, 2)});
    out.push_back({{"label", label},
                   {"problem", d.problem},
                   {"backend", d.backend},
                   {"candidate", d.candidate},
                   {"config", d.config},
                   {"us", d.us},
                   {"tflops", d.tflops},
                   {"from_db", r.from_db},
                   {"seconds", r.seconds},
                   {"skipped", r.skipped},
                   {"failed", std::count_if(r.measurements.begin(), r.measurements.end(),
                                            [](const Measurement& m) { return !m.verified; })},
                   {"candidates", candidate_rows(r.measurements)}});
    if (!a.json.empty()) write_json(a.json, out);  // after each problem: a run cut short keeps them
  }
  progress.finish();
  table.print();
  double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  fmt::print("{} problems: {} tuned, {} from the DB ({}), {:.2f} s\n", problems.size(), int(problems.size()) - hits,
             hits, tuner->db().device(), total);
}

void run_bench(const TuneArgs& a) {
  auto problems = a.problems.resolve();
  Progress progress;
  auto tuner = make_tuner(a, progress);
  Table table({"problem", "backend", "candidate", "us", "TFLOP/s", "vs cuBLASLt default", "vs eager", "chosen"});
  nlohmann::json out = nlohmann::json::array();
  double log_speedup = 0;
  int counted = 0;
  for (size_t i = 0; i < problems.size(); ++i) {
    const auto& [label, problem] = problems[i];
    progress.update(fmt::format("{} ({}/{})", label, i + 1, problems.size()), int(i), int(problems.size()));
    auto rows = tuner->bench(problem);
    double default_us = 0, eager_us = 0, chosen_us = 0;
    for (const auto& r : rows) {
      if (!r.measurement.verified) continue;
      if (r.backend == "cublaslt-default") default_us = r.measurement.us;
      if (r.backend == "eager") eager_us = r.measurement.us;
      if (r.chosen) chosen_us = r.measurement.us;
    }
    auto speedup = [](double base, double us) { return base > 0 && us > 0 ? fixed(base / us, 2) + "x" : "-"; };
    for (const auto& r : rows) {
      const Measurement& m = r.measurement;
      table.add({label, r.backend, r.candidate.name, m.verified ? fixed(m.us, 1) : "failed",
                 m.verified ? fixed(m.tflops, 1) : m.error.substr(0, 60), speedup(default_us, m.us),
                 speedup(eager_us, m.us), r.chosen ? "*" : ""});
      out.push_back({{"label", label},
                     {"problem", problem.key()},
                     {"backend", r.backend},
                     {"candidate", r.candidate.name},
                     {"us", m.us},
                     {"round_us", r.round_us},
                     {"tflops", m.tflops},
                     {"chosen", r.chosen},
                     {"verified", m.verified},
                     {"error", m.error}});
    }
    if (default_us > 0 && chosen_us > 0) {
      log_speedup += std::log(default_us / chosen_us);
      ++counted;
    }
    if (!a.json.empty()) write_json(a.json, out);
  }
  progress.finish();
  table.print();
  if (counted)
    fmt::print("chosen vs cuBLASLt default: geomean {:.3f}x over {} problems\n", std::exp(log_speedup / counted),
               counted);
}

}  // namespace

void add_tune(CLI::App& app) {
  auto a = std::make_shared<TuneArgs>();
  auto* cmd = app.add_subcommand("tune", "tune problems (default: llama3-8b at 16, 128, 4096 tokens) into the DB");
  add_common(cmd, *a);
  cmd->add_flag("-f,--force", a->force, "tune again even when the DB has a decision");
  cmd->add_option(
      "--only", a->only,
      "only the candidates (of the --search level) whose names contain one of the comma-separated TEXTs, to "
      "study a few variants; the DB is left alone");
  cmd->callback([a] { run_tune(*a); });
}

void add_bench(CLI::App& app) {
  auto a = std::make_shared<TuneArgs>();
  auto* cmd = app.add_subcommand("bench", "time each backend's best, the choice and cuBLASLt's default side by side");
  add_common(cmd, *a);
  cmd->add_option("--rounds", a->rounds, "interleaved timing rounds; each row reports its median (odd, 1-15)")
      ->check(CLI::Range(1, 15))
      ->check([](const std::string& v) { return std::stoi(v) % 2 ? "" : "--rounds must be odd"; })
      ->capture_default_str();
  cmd->callback([a] { run_bench(*a); });
}

}  // namespace gf::cli

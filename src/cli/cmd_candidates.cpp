// gemmforge candidates / compile: what each backend would try for a problem, and compiling it.
// Neither needs a GPU (cuBLASLt's list does: it says so).
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <thread>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/ranking.hpp"
#include "core/strings.hpp"
#include "gemmforge/error.hpp"

namespace gf::cli {
namespace {

struct CandidateArgs {
  ProblemArgs problems;
  std::string backends;
  std::string search = "default";
  int top_k = 0;
  bool no_cache = false;
  int jobs = 0;
  std::string json;
  std::string only;
};

std::vector<std::shared_ptr<Backend>> selected(const std::string& list) {
  std::vector<std::shared_ptr<Backend>> out;
  if (list.empty()) return all_backends();
  for (const auto& name : split_list(list, "--backends", true)) {
    auto b = find_backend(name);
    GF_CHECK(b, "unknown backend '{}' (known: {})", name, backend_versions());
    out.push_back(b);
  }
  return out;
}

// The candidates of each selected backend for p; a backend that offers none says why.
std::vector<std::pair<std::shared_ptr<Backend>, std::vector<Candidate>>> enumerate(const CandidateArgs& a,
                                                                                   const GemmProblem& p,
                                                                                   const DeviceInfo& device,
                                                                                   std::vector<std::string>& notes) {
  std::vector<std::pair<std::shared_ptr<Backend>, std::vector<Candidate>>> out;
  for (const auto& b : selected(a.backends)) {
    std::string why = b->unavailable();
    if (why.empty()) why = b->supports(p);
    if (why.empty()) {
      try {
        std::vector<Candidate> cands = b->candidates(p, device, {parse_search(a.search), a.top_k});
        std::erase_if(cands, [&](const Candidate& c) { return !name_matches(c.name, a.only); });
        out.emplace_back(b, std::move(cands));
        continue;
      } catch (const Error& e) {
        why = e.what();
      }
    }
    notes.push_back(fmt::format("{}: {}", b->name(), why));
  }
  return out;
}

DeviceInfo device_or_assumed() {
  DeviceInfo d = DeviceInfo::query();
  return d.present ? d : DeviceInfo::assumed_hopper();
}

void run_candidates(const CandidateArgs& a) {
  DeviceInfo device = device_or_assumed();
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [label, p] : a.problems.resolve()) {
    std::vector<std::string> notes;
    fmt::print("{} ({})\n", label, p.key());
    Table table({"backend", "candidate", "config"});
    for (const auto& [b, cands] : enumerate(a, p, device, notes)) {
      for (const auto& c : cands) {
        table.add({c.backend, c.name, c.config.dump().substr(0, 100)});
        out.push_back({{"problem", p.key()}, {"backend", c.backend}, {"name", c.name}, {"config", c.config}});
      }
    }
    table.print();
    for (const auto& n : notes) fmt::print("  no candidates from {}\n", n);
    fmt::print("\n");
  }
  if (!device.present) fmt::print("({})\n", device.absent_reason);
  if (!a.json.empty()) write_json(a.json, out);
}

void run_compile(const CandidateArgs& a) {
  DeviceInfo device = device_or_assumed();
  nlohmann::json out = nlohmann::json::array();
  Progress progress;
  for (const auto& [label, p] : a.problems.resolve()) {
    std::vector<std::string> notes;
    std::vector<std::pair<std::shared_ptr<Backend>, Candidate>> work;
    for (const auto& [b, cands] : enumerate(a, p, device, notes))
      for (const auto& c : cands) work.emplace_back(b, c);
    std::vector<CompileReport> reports(work.size());
    std::atomic<int> next{0}, done{0};
    int jobs = a.jobs > 0 ? a.jobs : int(std::max(1u, std::thread::hardware_concurrency()));
    std::vector<std::thread> threads;
    for (int t = 0; t < std::min<int>(jobs, int(work.size())); ++t)
      threads.emplace_back([&] {
        for (size_t i = size_t(next++); i < work.size(); i = size_t(next++)) {
          reports[i] = work[i].first->compile(p, work[i].second, !a.no_cache);
          progress.update(label + " compile", ++done, int(work.size()));
        }
      });
    for (auto& t : threads) t.join();
    progress.finish();

    fmt::print("{} ({})\n", label, p.key());
    Table table({"backend", "candidate", "ok", "seconds", "registers", "spill bytes", "cached"});
    std::vector<double> cold;
    for (size_t i = 0; i < work.size(); ++i) {
      const auto& r = reports[i];
      const auto& c = work[i].second;
      table.add({c.backend, c.name, r.ok ? "yes" : "NO", fixed(r.seconds, 3), fmt::format("{}", r.registers),
                 fmt::format("{}", r.spill_bytes), r.cached ? "yes" : "no"});
      if (r.ok && !r.cached) cold.push_back(r.seconds);
      out.push_back({{"problem", p.key()},
                     {"backend", c.backend},
                     {"name", c.name},
                     {"ok", r.ok},
                     {"compile_seconds", r.seconds},
                     {"registers", r.registers},
                     {"spill_bytes", r.spill_bytes},
                     {"cached", r.cached},
                     {"log", r.ok ? "" : r.log}});
      if (!r.ok) fmt::print(stderr, "{} failed to compile:\n{}\n", c.id(), r.log);
    }
    table.print();
    for (const auto& n : notes) fmt::print("  no candidates from {}\n", n);
    if (!cold.empty()) {
      std::sort(cold.begin(), cold.end());
      fmt::print("  {} cold compiles, median {:.3f} s\n", cold.size(), cold[cold.size() / 2]);
    }
    fmt::print("\n");
  }
  if (!a.json.empty()) write_json(a.json, out);
}

void add_options(CLI::App* cmd, CandidateArgs& a) {
  a.problems.add_to(*cmd);
  cmd->add_option("-b,--backends", a.backends, "comma-separated backends (default: all)");
  cmd->add_option("-s,--search", a.search, "search effort: fast, default, exhaustive")->capture_default_str();
  cmd->add_option("--top-k", a.top_k, "cuBLASLt heuristic algorithms to list");
  cmd->add_option("--json", a.json, "also write the list as JSON to FILE");
  cmd->add_option("--only", a.only,
                  "only the candidates (of the --search level) whose names contain one of the comma-separated TEXTs");
}

}  // namespace

void add_candidates(CLI::App& app) {
  auto a = std::make_shared<CandidateArgs>();
  auto* cmd = app.add_subcommand("candidates", "list each backend's candidates for problems (no GPU needed)");
  add_options(cmd, *a);
  cmd->callback([a] { run_candidates(*a); });
}

void add_compile(CLI::App& app) {
  auto a = std::make_shared<CandidateArgs>();
  auto* cmd = app.add_subcommand("compile", "compile each backend's candidates for problems (no GPU needed)");
  add_options(cmd, *a);
  cmd->add_flag("--no-cache", a->no_cache, "compile even what the kernel cache holds");
  cmd->add_option("-j,--jobs", a->jobs, "parallel compiles (default: one per core)");
  cmd->callback([a] { run_compile(*a); });
}

}  // namespace gf::cli

// gemmforge candidates / compile: what each backend would try for a problem of either family,
// and compiling it. Neither needs a GPU (cuBLASLt's list does: it says so).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/median.hpp"
#include "core/parallel.hpp"
#include "core/ranking.hpp"
#include "core/strings.hpp"
#include "gemmforge/error.hpp"
#include "jit/compile.hpp"

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

// The family's backends named by --backends (all when none is); a name no family knows is an error.
template <class Problem>
std::vector<std::shared_ptr<BackendOf<Problem>>> selected(const std::string& list) {
  const auto names = split_list(list, "--backends", true);
  for (const auto& name : names)
    GF_CHECK(find_backend<GemmProblem>(name) || find_backend<RowOpSpec>(name), "unknown backend {} (known: {})",
             quote(name), backend_names());
  std::vector<std::shared_ptr<BackendOf<Problem>>> out;
  for (const auto& b : backends<Problem>())
    if (names.empty() || std::find(names.begin(), names.end(), b->name()) != names.end()) out.push_back(b);
  return out;
}

template <class Problem>
using Offer = std::pair<std::shared_ptr<BackendOf<Problem>>, Candidate>;

// The candidates of each selected backend for p; a backend that offers none says why in notes.
template <class Problem>
std::vector<Offer<Problem>> enumerate(const CandidateArgs& a, const Problem& p, const DeviceInfo& device,
                                      std::vector<std::string>& notes) {
  std::vector<Offer<Problem>> out;
  const SearchOptions search{parse_search(a.search), a.top_k};
  for (const auto& b : selected<Problem>(a.backends)) {
    std::string why = b->unavailable();
    if (why.empty()) why = b->supports(p);
    if (why.empty()) {
      try {
        for (auto& c : b->candidates(p, device, search))
          if (name_matches(c.name, a.only)) out.emplace_back(b, std::move(c));
        continue;
      } catch (const Error& e) {
        why = e.what();
      }
    }
    notes.push_back(fmt::format("{}: {}", b->name(), why));
  }
  return out;
}

// With every backend asked (no --backends, no --only), a problem none of them offers a candidate for
// is an error once all are listed: nothing can run it, which a listing alone would hide in exit 0.
struct Unrunnable {
  bool every_backend;
  std::vector<std::string> keys;
  void note(const std::string& key, size_t offers) {
    if (every_backend && offers == 0) keys.push_back(key);
  }
  void check() const {
    GF_CHECK(keys.empty(), "no backend can run {} (each one's reason is above)", fmt::join(keys, ", "));
  }
};

// Runs fn(label, problem) for every GEMM, then every row op, the commands ask for.
template <class Fn>
void for_each_problem(const ProblemArgs& problems, Fn&& fn) {
  for (const auto& [label, p] : problems.resolve()) fn(label, p);
  for (const auto& op : problems.resolve_ops()) fn(op.key(), op);
}

void run_candidates(const CandidateArgs& a) {
  DeviceInfo device = device_or_assumed();
  nlohmann::json out = nlohmann::json::array();
  Unrunnable unrunnable{a.backends.empty() && a.only.empty(), {}};
  for_each_problem(a.problems, [&](const std::string& label, const auto& p) {
    std::vector<std::string> notes;
    fmt::print("{} ({})\n", label, p.key());
    Table table({"backend", "candidate", "config"});
    const auto offers = enumerate(a, p, device, notes);
    for (const auto& [b, c] : offers) {
      table.add({c.backend, c.name, c.config.dump().substr(0, 100)});
      out.push_back({{"problem", p.key()}, {"backend", c.backend}, {"name", c.name}, {"config", c.config}});
    }
    unrunnable.note(p.key(), offers.size());
    table.print();
    for (const auto& n : notes) fmt::print("  no candidates from {}\n", n);
    fmt::print("\n");
  });
  if (!device.present) fmt::print("({})\n", device.absent_reason);
  if (!a.json.empty()) write_json(a.json, out);
  unrunnable.check();
}

void run_compile(const CandidateArgs& a) {
  DeviceInfo device = device_or_assumed();
  nlohmann::json out = nlohmann::json::array();
  Progress progress;
  int failed = 0;
  Unrunnable unrunnable{a.backends.empty() && a.only.empty(), {}};
  for_each_problem(a.problems, [&](const std::string& label, const auto& p) {
    std::vector<std::string> notes;
    const auto work = enumerate(a, p, device, notes);
    unrunnable.note(p.key(), work.size());
    std::vector<CompileReport> reports(work.size());
    std::atomic<int> done{0};
    parallel_for(int(work.size()), a.jobs > 0 ? a.jobs : default_jobs(), [&](int i) {
      const auto& [backend, cand] = work[size_t(i)];
      // A compile that throws (a cache that cannot be written, a worker that died) is that
      // candidate's failure, reported with the rest.
      try {
        reports[size_t(i)] = backend->compile(p, cand, !a.no_cache);
      } catch (const std::exception& e) {
        reports[size_t(i)] = {.ok = false, .log = e.what()};
      }
      progress.update(label + " compile", ++done, int(work.size()));
    });
    progress.finish();

    fmt::print("{} ({})\n", label, p.key());
    Table table({"backend", "candidate", "ok", "seconds", "registers", "spill bytes", "cached"});
    std::vector<double> cold;
    for (size_t i = 0; i < work.size(); ++i) {
      const auto& r = reports[i];
      const auto& c = work[i].second;
      failed += !r.ok;
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
                     // A failure's whole log; a success's ptxas performance notes (wgmma serialized, ...).
                     {"log", r.ok ? jit::performance_notes(r.log) : r.log}});
      if (!r.ok) fmt::print(stderr, "{} failed to compile:\n{}\n", c.id(), r.log);
    }
    table.print();
    for (const auto& n : notes) fmt::print("  no candidates from {}\n", n);
    if (!cold.empty()) fmt::print("  {} cold compiles, median {:.3f} s\n", cold.size(), median(cold));
    fmt::print("\n");
  });
  if (!a.json.empty()) write_json(a.json, out);
  GF_CHECK(failed == 0, "{} candidate{} failed to compile", failed, failed == 1 ? "" : "s");
  unrunnable.check();
}

void add_options(CLI::App* cmd, CandidateArgs& a) {
  a.problems.add_to(*cmd, /*with_ops=*/true);
  cmd->add_option("-b,--backends", a.backends, "comma-separated backends (default: all)");
  cmd->add_option("-s,--search", a.search, "search effort: fast, default, exhaustive")
      ->capture_default_str()
      ->check(CLI::IsMember({"fast", "default", "exhaustive"}));
  cmd->add_option("--top-k", a.top_k, "at most this many candidates a backend (cuBLASLt: heuristic results)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--json", a.json, "also write the list as JSON to FILE");
  cmd->add_option("--only", a.only,
                  "only the candidates (of the --search level) whose names contain one of the comma-separated TEXTs (a "
                  "TEXT ending in $ must end the name)");
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
  cmd->add_option("-j,--jobs", a->jobs, "parallel compiles (default: one per core)")->check(CLI::NonNegativeNumber);
  cmd->callback([a] { run_compile(*a); });
}

}  // namespace gf::cli

// gemmforge prepare: a serving process's start-up, timed. Each problem's decision is looked up
// (the local DB, then a redis:// store, then the system DB) and its kernel built or loaded (the
// kernel cache, then the store's shared kernels) through a Runtime and an OpsRuntime, as a
// program's first calls would. On a fresh host whose DB is on Redis, this is the warm start a
// fleet gets; the table says what each problem runs and whether a decision was found for it.
#include <fmt/format.h>

#include <chrono>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/ops.hpp"
#include "gemmforge/runtime.hpp"
#include "gemmforge/tuning_db.hpp"

namespace gf::cli {
namespace {

struct PrepareArgs {
  ProblemArgs problems;
  std::string db;
  std::string json;
};

void run_prepare(const PrepareArgs& a) {
  const DeviceInfo device = DeviceInfo::query();
  GF_CHECK(device.present, "prepare needs a GPU: {}", device.absent_reason);
  const auto gemms = a.problems.resolve();
  const auto ops = a.problems.resolve_ops();
  std::vector<GemmProblem> gemm_list;
  for (const auto& g : gemms) gemm_list.push_back(g.problem);

  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  Runtime runtime({.db_path = a.db});
  runtime.prepare(gemm_list);
  const double gemm_s = std::chrono::duration<double>(Clock::now() - start).count();
  OpsRuntime ops_runtime(a.db);
  ops_runtime.prepare(ops);
  const double total_s = std::chrono::duration<double>(Clock::now() - start).count();

  // After the timing: the runtimes have copied what they found into the local DB.
  auto db = TuningDb::open(a.db, device.fingerprint());
  Table table({"problem", "key", "runs", "decision"});
  nlohmann::json rows = nlohmann::json::array();
  int found = 0;
  for (const auto& [label, p] : gemms) {
    const bool tuned = db->decision(p.key()).has_value();
    found += tuned;
    const std::string runs = runtime.choice(p);
    table.add({label, p.key(), runs, tuned ? "stored" : "none: the default"});
    rows.push_back({{"problem", p.key()}, {"label", label}, {"runs", runs}, {"decision", tuned}});
  }
  for (const auto& op : ops) {
    const bool tuned = db->decision(op.key()).has_value();
    found += tuned;
    table.add({op.key(), op.key(), "-", tuned ? "stored" : "none: the default"});
    rows.push_back({{"problem", op.key()}, {"label", op.key()}, {"decision", tuned}});
  }
  table.print();
  const size_t total = gemms.size() + ops.size();
  fmt::print("{} problems ready in {:.2f} s (GEMMs {:.2f} s), {} with a stored decision ({})\n", total, total_s,
             gemm_s, found, db->describe());
  if (!a.json.empty())
    write_json(a.json, {{"device", device.fingerprint()},
                        {"db", db->describe()},
                        {"seconds", total_s},
                        {"gemm_seconds", gemm_s},
                        {"with_decision", found},
                        {"problems", rows}});
}

}  // namespace

void add_prepare(CLI::App& app) {
  auto a = std::make_shared<PrepareArgs>();
  auto* cmd = app.add_subcommand(
      "prepare", "look up and build every problem's stored kernel as a serving process starts, timed (GPU)");
  a->problems.add_to(*cmd, /*with_ops=*/true);
  cmd->add_option("--db", a->db, "tuning DB path or redis:// URL (default: GEMMFORGE_DB, else the user's DB)");
  cmd->add_option("--json", a->json, "write the timing and each problem's choice to this file");
  cmd->callback([a] { run_prepare(*a); });
}

}  // namespace gf::cli

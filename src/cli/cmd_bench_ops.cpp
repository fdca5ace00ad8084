// gemmforge bench-ops: the memory-bound row ops, tuned like any problem (in the worker, into the
// DB), their winners timed again, reported beside the device-to-device copy bandwidth measured in
// the same run. It only prints: the tuner does the work.
#include <fmt/format.h>

#include <algorithm>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/strings.hpp"
#include "gemmforge/error.hpp"

namespace gf::cli {
namespace {

struct OpsArgs {
  TuneArgs tune;
  int max_configs = 16;
};

std::vector<std::string> default_ops() {
  std::vector<std::string> out;
  for (const char* op : {"softmax", "rmsnorm"})
    for (const char* shape : {"262144x1024", "65536x4096", "16384x16384", "4096x65536", "1024x262144"})
      out.push_back(fmt::format("{}:{}:bf16", op, shape));
  return out;
}

// Every config tried, fastest first: what the ranking of the row-op space is checked against.
nlohmann::json configs_json(const RowOpSpec& s, std::vector<Measurement> ms) {
  std::stable_sort(ms.begin(), ms.end(), [](const Measurement& a, const Measurement& b) {
    return a.verified != b.verified ? a.verified : a.us < b.us;
  });
  nlohmann::json out = nlohmann::json::array();
  for (const auto& m : ms)
    out.push_back({{"backend", m.backend},
                   {"config", m.candidate},
                   {"verified", m.verified},
                   {"us", m.us},
                   {"tbps", s.rate(m.us)},
                   {"error", m.error}});
  return out;
}

void run_bench_ops(OpsArgs& a) {
  TuneArgs& t = a.tune;
  if (t.problems.ops.empty()) t.problems.ops = default_ops();
  if (t.top_k == 0) t.top_k = a.max_configs;
  const std::vector<RowOpSpec> specs = t.problems.resolve_ops();
  Progress progress;
  auto tuner = make_tuner(t, progress);
  const double copy = tuner->copy_bandwidth_tbps();
  fmt::print("device-to-device copy: {:.2f} TB/s (bytes read + written)\n", copy);
  // Each backend's best verified config beside the winner: the backends side by side.
  const std::vector<std::string> chosen = split_list(t.backends, "--backends", true);
  std::vector<std::string> names;
  for (const auto& b : backends<RowOpSpec>())
    if (b->unavailable().empty() && (chosen.empty() || std::ranges::find(chosen, b->name()) != chosen.end()))
      names.push_back(b->name());
  std::vector<std::string> header = {"op", "backend", "config", "us", "TB/s", "% of copy"};
  for (const auto& n : names) header.push_back(n + " %");
  header.insert(header.end(), {"configs ok", "source"});
  Table table(header);
  nlohmann::json out = {{"copy_tbps", copy}, {"ops", nlohmann::json::array()}};
  for (const auto& s : specs) {
    BenchResult bench;
    try {
      bench = tuner->bench(s);
    } catch (const Error& e) {
      std::vector<std::string> row = {s.key(), "-", "-", "failed", std::string(e.what()).substr(0, 60), "-"};
      row.resize(header.size(), "-");
      table.add(row);
      continue;
    }
    const auto& measured =
        bench.tuned.from_db ? tuner->db().measurements(bench.tuned.problem) : bench.tuned.measurements;
    const int ok = int(std::count_if(measured.begin(), measured.end(), [](const auto& m) { return m.verified; }));
    const BenchRow* best = nullptr;
    for (const auto& r : bench.rows)
      if (r.chosen) best = &r;
    if (!best || !best->measurement.verified) {
      std::vector<std::string> row = {
          s.key(), "-", "-", "failed", best ? best->measurement.error.substr(0, 60) : "no verified config", "-"};
      row.resize(header.size() - 2, "-");
      row.insert(row.end(), {fmt::format("{}/{}", ok, measured.size()), "-"});
      table.add(row);
      continue;
    }
    const Measurement& m = best->measurement;
    const std::string& name = best->candidate.name;
    std::vector<std::string> row = {s.key(),        best->candidate.backend, name,
                                    fixed(m.us, 1), fixed(m.rate, 2),        fixed(100.0 * m.rate / copy, 1)};
    nlohmann::json per_backend = nlohmann::json::object();
    for (const auto& n : names) {
      double fastest = 0;  // us of the backend's fastest verified config
      for (const auto& x : measured)
        if (x.backend == n && x.verified && (fastest == 0 || x.us < fastest)) fastest = x.us;
      row.push_back(fastest > 0 ? fixed(100.0 * s.rate(fastest) / copy, 1) : "-");
      if (fastest > 0) per_backend[n] = {{"us", fastest}, {"tbps", s.rate(fastest)}};
    }
    row.insert(row.end(), {fmt::format("{}/{}", ok, measured.size()), bench.tuned.from_db ? "db" : "tuned"});
    table.add(row);
    out["ops"].push_back({{"op", s.key()},
                          {"backend", best->candidate.backend},
                          {"config", name},
                          {"us", m.us},
                          {"round_us", best->round_us},
                          {"tbps", m.rate},
                          {"pct_copy", 100.0 * m.rate / copy},
                          {"verified_configs", ok},
                          {"backends", per_backend},
                          {"configs", configs_json(s, measured)}});
    if (!t.json.empty()) write_json(t.json, out);
  }
  progress.finish();
  table.print();
  if (!t.json.empty()) write_json(t.json, out);
}

}  // namespace

void add_bench_ops(CLI::App& app) {
  auto a = std::make_shared<OpsArgs>();
  auto* cmd = app.add_subcommand(
      "bench-ops", "tune and time softmax / RMSNorm / LayerNorm; TB/s beside the copy bandwidth of the same run");
  a->tune.add_to(cmd, /*with_ops=*/true);
  a->tune.add_selection(cmd);
  a->tune.add_rounds(cmd);
  cmd->add_option("--max-configs", a->max_configs,
                  "configs tried per op, as --top-k (a config's _h2 twin comes with it; the default for -o: "
                  "softmax and rmsnorm, bf16, at 262144x1024 ... 1024x262144)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->callback([a] { run_bench_ops(*a); });
}

}  // namespace gf::cli

// gemmforge bench-ops: tunes the memory-bound row ops and reports achieved bandwidth beside the
// device-to-device copy bandwidth measured in the same run.
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/tuner.hpp"
#include "harness/rowop_bench.hpp"

namespace gf::cli {
namespace {

struct OpsArgs {
  std::vector<std::string> ops;
  int max_configs = 16;
  std::string db;
  std::string json;
  std::string only;
};

// Every config tried, fastest first: what the ranking of ops::row_configs is checked against.
nlohmann::json configs_json(const std::vector<ops::RowMeasurement>& ms) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& m : ms)
    out.push_back({{"config", m.name},
                   {"verified", m.verified},
                   {"us", m.us},
                   {"tbps", m.tbps},
                   {"ctas", m.ctas},
                   {"error", m.error}});
  return out;
}

std::vector<std::string> default_ops() {
  std::vector<std::string> out;
  for (const char* op : {"softmax", "rmsnorm"})
    for (const char* shape : {"262144x1024", "65536x4096", "16384x16384", "4096x65536", "1024x262144"})
      out.push_back(fmt::format("{}:{}:bf16", op, shape));
  return out;
}

void run_bench_ops(const OpsArgs& a) {
  DeviceInfo device = DeviceInfo::query();
  GF_CHECK(device.present, "no GPU found: {}. Without a GPU, gemmforge compile and candidates still work.",
           device.absent_reason);
  std::vector<RowOpSpec> specs;
  for (const auto& text : a.ops.empty() ? default_ops() : a.ops) specs.push_back(RowOpSpec::parse(text));
  TuningDb db(a.db.empty() ? TuningDb::default_path() : std::filesystem::path(a.db), tuning_fingerprint(device));
  const double copy = ops::copy_bandwidth_tbps(device);
  fmt::print("device-to-device copy: {:.2f} TB/s (bytes read + written)\n", copy);
  Progress progress;
  Table table({"op", "config", "us", "TB/s", "% of copy", "CTAs", "configs ok"});
  nlohmann::json out = {{"copy_tbps", copy}, {"ops", nlohmann::json::array()}};
  for (const auto& s : specs) {
    auto ms = ops::tune_row_op(
        s, device, a.max_configs, [&](int done, int total) { progress.update(s.key(), done, total); }, a.only);
    if (ms.empty()) {
      table.add({s.key(), "-", "-", fmt::format("no config has '{}'", a.only), "-", "-", "0/0"});
      continue;
    }
    int ok = int(std::count_if(ms.begin(), ms.end(), [](const auto& m) { return m.verified; }));
    const auto& best = ms.front();
    if (!best.verified) {
      table.add({s.key(), "-", "failed", best.error.substr(0, 60), "-", "-", fmt::format("0/{}", ms.size())});
      continue;
    }
    table.add({s.key(), best.name.substr(best.name.rfind("_t")), fixed(best.us, 1), fixed(best.tbps, 2),
               fixed(100.0 * best.tbps / copy, 1), std::to_string(best.ctas), fmt::format("{}/{}", ok, ms.size())});
    Decision d{s.key(), "rowops", best.name, best.config.to_json(), best.us, 0.0, {"rowops"}, ""};
    std::vector<Measurement> all;
    for (const auto& m : ms)
      all.push_back({s.key(), "rowops", m.name, m.config.to_json(), m.verified, m.us, 0.0, m.rel_err, m.compile_seconds,
                     m.error});
    if (a.only.empty()) db.store(d, all);  // a partial search decides nothing
    out["ops"].push_back({{"op", s.key()},
                          {"config", best.name},
                          {"us", best.us},
                          {"tbps", best.tbps},
                          {"pct_copy", 100.0 * best.tbps / copy},
                          {"verified_configs", ok},
                          {"configs", configs_json(ms)}});
  }
  progress.finish();
  table.print();
  if (!a.json.empty()) write_json(a.json, out);
}

}  // namespace

void add_bench_ops(CLI::App& app) {
  auto a = std::make_shared<OpsArgs>();
  auto* cmd =
      app.add_subcommand("bench-ops", "tune and time softmax / RMSNorm / LayerNorm; TB/s beside copy bandwidth");
  cmd->add_option("-o,--op", a->ops,
                  "OP[+residual|+valid]:ROWSxCOLS[:dtype[->out]], repeatable (default: softmax and rmsnorm, bf16, "
                  "at 262144x1024 ... 1024x262144)");
  cmd->add_option("--max-configs", a->max_configs, "configs tried per op (a config's _h2 twin comes with it)")
      ->capture_default_str();
  cmd->add_option("--db", a->db, "tuning DB path");
  cmd->add_option("--json", a->json, "also write the results as JSON to FILE");
  cmd->add_option(
      "--only", a->only,
      "only the configs whose names contain one of the comma-separated TEXTs, to study a few variants (names end "
      "_t<threads>_r<rows per CTA>_v<vector>_x<cluster>[_s | _b<stages> | _p<stages>][_h2], e.g. _x8_b2: "
      "clusters of 8, bulk copies, 2 stages; _h2: bf16 softmax takes the max over bf16 pairs); ops with "
      "none are skipped, --max-configs still applies, nothing is stored in the "
      "DB");
  cmd->callback([a] { run_bench_ops(*a); });
}

}  // namespace gf::cli

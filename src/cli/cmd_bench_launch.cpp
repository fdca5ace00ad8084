// gemmforge bench-launch: the device time of an empty kernel launched alone after the L2 flush (as
// bench's single launches) and back to back (its graph mode), for decode GEMMs' launch shapes:
// the fixed cost a lone launch pays before any work.
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "harness/launch_probe.hpp"

namespace gf::cli {
namespace {

void run_bench_launch(const std::string& json_path) {
  const DeviceInfo device = DeviceInfo::query();
  GF_CHECK(device.present, "bench-launch needs a GPU: {}", device.absent_reason);
  const auto costs = harness::time_launches(harness::decode_launch_shapes(device), device);
  nlohmann::json out = {{"device", device.describe()}, {"launches", nlohmann::json::array()}};
  fmt::print("an empty kernel, device time per launch ({})\n", device.describe());
  fmt::print("{:<44} {:>10} {:>10} {:>13}\n", "launch", "alone us", "graph us", "alone - graph");
  for (const auto& c : costs) {
    fmt::print("{:<44} {:>10.2f} {:>10.2f} {:>13.2f}\n", c.shape.name, c.single_us, c.graph_us,
               c.single_us - c.graph_us);
    out["launches"].push_back({{"name", c.shape.name},
                               {"ctas", c.shape.ctas},
                               {"threads", c.shape.threads},
                               {"smem_bytes", c.shape.smem_bytes},
                               {"cluster", c.shape.cluster},
                               {"single_us", c.single_us},
                               {"graph_us", c.graph_us}});
  }
  if (!json_path.empty()) write_json(json_path, out);
}

}  // namespace

void add_bench_launch(CLI::App& app) {
  auto json_path = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("bench-launch",
                                 "device time of an empty kernel alone after the L2 flush and back to back, for "
                                 "decode GEMMs' launch shapes (shared memory, clusters): a lone launch's fixed cost");
  cmd->add_option("--json", *json_path, "write the figures here");
  cmd->callback([json_path] { run_bench_launch(*json_path); });
}

}  // namespace gf::cli

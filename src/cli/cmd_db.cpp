// gemmforge db show | export | clear
#include <fmt/format.h>

#include <iostream>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "gemmforge/backend.hpp"
#include "gemmforge/tuning_db.hpp"

namespace gf::cli {
namespace {

std::unique_ptr<TuningDb> open_db(const std::string& path) {
  DeviceInfo device = DeviceInfo::query();
  return std::make_unique<TuningDb>(path.empty() ? TuningDb::default_path() : std::filesystem::path(path),
                                    tuning_fingerprint(device));
}

}  // namespace

void add_db(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<std::string>();
  auto* db = app.add_subcommand("db", "show, export or clear the tuning DB");
  db->require_subcommand(1);
  db->add_option("--db", *path, "tuning DB path (default: ~/.cache/gemmforge/tuning.db)");

  db->add_subcommand("show", "the stored decisions, per device")->callback([path] {
    auto d = open_db(*path);
    nlohmann::json all = d->dump();
    std::string device;
    for (const auto& row : all) {
      if (row["device"] != device) {
        device = row["device"];
        fmt::print("\ndevice: {}{}\n", device, device == d->device() ? "  (this machine)" : "");
      }
    }
    Table table({"problem", "backend", "candidate", "us", "TFLOP/s", "tuned at"});
    for (const auto& row : all)
      table.add({row["problem"], row["backend"], row["candidate"], fixed(row["us"], 1), fixed(row["tflops"], 1),
                 row["tuned_at"]});
    table.print();
    fmt::print("{} decisions\n", all.size());
  });

  auto* exp = db->add_subcommand("export", "every decision as JSON (to --json FILE or stdout)");
  exp->add_option("--json", *json, "output file");
  exp->callback([path, json] {
    auto all = open_db(*path)->dump();
    if (json->empty())
      std::cout << all.dump(2) << "\n";
    else
      write_json(*json, all);
  });

  db->add_subcommand("clear", "delete every decision and measurement")->callback([path] {
    fmt::print("removed {} decisions\n", open_db(*path)->clear());
  });
}

}  // namespace gf::cli

// gemmforge db show | export | import | pin | clear
#include <fmt/format.h>

#include <fstream>
#include <iostream>

#include "cli/commands.hpp"
#include "cli/common.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"
#include "gemmforge/backend.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/problem.hpp"
#include "gemmforge/tuning_db.hpp"

namespace gf::cli {
namespace {

std::unique_ptr<TuningDb> open_db(const std::string& path) {
  return TuningDb::open(path, DeviceInfo::query().fingerprint());
}

void show(const std::string& path) {
  auto d = open_db(path);
  const nlohmann::json all = d->dump();
  std::string device;
  std::unique_ptr<Table> table;
  auto flush = [&] {
    if (table) table->print();
  };
  for (const auto& row : all) {
    if (row["device"] != device) {
      flush();
      device = row["device"];
      fmt::print("\ndevice: {}{}\n", device, device == d->device() ? "  (this machine)" : "");
      table = std::make_unique<Table>(
          std::vector<std::string>{"problem", "backend", "candidate", "us", "rate", "search", "tuned at"});
    }
    table->add({row["problem"], row["backend"], row["candidate"], fixed(row["us"], 1), fixed(row["rate"], 1),
                row["search"], row["tuned_at"]});
  }
  flush();
  fmt::print("{} decisions in {}\n", all.size(), d->path().string());
}

// Stores a backend's candidate, named, as the problem's decision: to run a kernel the tuner did
// not pick (an A/B of two schedules inside a whole model, say). Its time is unknown: 0, and the
// search "pinned", so `db show` tells it apart and a tuned decision replaces it only with --force.
void pin(const std::string& path, const std::string& spec, const std::string& backend_name,
         const std::string& candidate) {
  const GemmProblem p = GemmProblem::parse(spec);
  auto backend = find_backend<GemmProblem>(backend_name);
  GF_CHECK(backend, "no GEMM backend named {}", quote(backend_name));
  const std::string unsupported = backend->supports(p);
  GF_CHECK(unsupported.empty(), "{} cannot run {}: {}", backend_name, p.key(), unsupported);
  const auto cands = backend->candidates(p, device_or_assumed(), {.level = Search::exhaustive});
  auto it = std::find_if(cands.begin(), cands.end(), [&](const Candidate& c) { return c.name == candidate; });
  GF_CHECK(it != cands.end(),
           "{} has no candidate {} for {} ({} candidates; `gemmforge candidates -p {} -b {} -s "
           "exhaustive` lists them)",
           backend_name, quote(candidate), p.key(), cands.size(), p.key(), backend_name);
  Decision d{.problem = p.key(),
             .family = std::string(GemmProblem::kFamily),
             .backend = backend_name,
             .backend_version = backend->version(),
             .candidate = it->name,
             .config = it->config,
             .search = std::string(Decision::kPinned),
             .backends_considered = {backend_name}};
  auto db = open_db(path);
  db->store(d, {});
  fmt::print("pinned {}:{} for {} in {}\n", backend_name, it->name, p.key(), db->describe());
}

// Empties the DB; a file that cannot be opened as one (damaged, foreign) is deleted instead.
void clear(const std::string& path) {
  try {
    fmt::print("removed {} decisions\n", open_db(path)->clear());
  } catch (const Error& e) {
    const auto file = TuningDb::local_path(path);
    log().warn("{}", e.what());
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(file.string() + suffix);
    fmt::print("deleted {}; the next run creates it afresh\n", file.string());
  }
}

}  // namespace

void add_db(CLI::App& app) {
  auto path = std::make_shared<std::string>();
  auto json = std::make_shared<std::string>();
  auto* db = app.add_subcommand("db", "show, export, import or clear the tuning DB");
  db->require_subcommand(1);
  db->add_option("--db", *path,
                 "tuning DB path (default: GEMMFORGE_DB, else ~/.cache/gemmforge/tuning.db); with a redis:// URL, the "
                 "local DB in front of it (show, export and clear read the local DB; import also offers the "
                 "decisions to the remote store)");

  db->add_subcommand("show", "the stored decisions, per device")->callback([path] { show(*path); });

  auto* exp = db->add_subcommand("export", "every decision as JSON (to --json FILE or stdout)");
  exp->add_option("--json", *json, "output file");
  exp->callback([path, json] {
    auto all = open_db(*path)->export_json();
    if (json->empty())
      std::cout << all.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    else
      write_json(*json, all);
  });

  auto file = std::make_shared<std::string>();
  auto* imp = db->add_subcommand("import",
                                 "add the decisions of an export (another host's, a shipped one); the faster "
                                 "of two for one problem and device stays");
  imp->add_option("file", *file, "a JSON file written by gemmforge db export")->required()->check(CLI::ExistingFile);
  imp->callback([path, file] {
    std::ifstream in(*file);
    auto exported = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    GF_CHECK(!exported.is_discarded(), "{} is not JSON", quote(*file));
    auto d = open_db(*path);
    const int stored = d->import_json(exported);
    fmt::print("imported {} of {} decisions into {}\n", stored, exported["decisions"].size(), d->describe());
  });

  auto spec = std::make_shared<std::string>(), backend = std::make_shared<std::string>(),
       candidate = std::make_shared<std::string>();
  auto* pin_cmd = db->add_subcommand("pin",
                                     "store a backend's candidate, by name, as a GEMM's decision (the kernel "
                                     "the runtime then runs; a tune replaces it only with --force)");
  pin_cmd->add_option("-p,--problem", *spec, "GEMM spec")->required();
  pin_cmd->add_option("-b,--backend", *backend, "backend")->required();
  pin_cmd->add_option("--candidate", *candidate, "candidate name, as `gemmforge candidates -s exhaustive` lists it")
      ->required();
  pin_cmd->callback([path, spec, backend, candidate] { pin(*path, *spec, *backend, *candidate); });

  db->add_subcommand("clear", "delete every decision and measurement (a damaged DB file is deleted)")->callback([path] {
    clear(*path);
  });
}

}  // namespace gf::cli

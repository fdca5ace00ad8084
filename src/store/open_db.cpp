// Which stores a command or a runtime uses: --db / db_path, else GEMMFORGE_DB, and
// GEMMFORGE_SYSTEM_DB (see TuningDb::open).
#include <fmt/format.h>

#include <cstdlib>

#include "gemmforge/tuning_db.hpp"
#include "store/redis_url.hpp"
#include "store/remote_store.hpp"

namespace gf {

namespace {
// --db's value, else GEMMFORGE_DB's: a path, a redis:// URL, or "".
std::string chosen_db(const std::string& where) {
  const char* env = std::getenv("GEMMFORGE_DB");
  return !where.empty() ? where : env ? env : "";
}
}  // namespace

std::filesystem::path TuningDb::local_path(const std::string& where) {
  const std::string chosen = chosen_db(where);
  return chosen.empty() || store::is_remote_url(chosen) ? default_path() : std::filesystem::path(chosen);
}

std::unique_ptr<TuningDb> TuningDb::open(const std::string& where, std::string device) {
  StoreOptions more;
  if (const std::string chosen = chosen_db(where); store::is_remote_url(chosen)) more.remote = chosen;
  if (const char* system = std::getenv("GEMMFORGE_SYSTEM_DB"); system && *system) more.system_db = system;
  return std::make_unique<TuningDb>(local_path(where), std::move(device), more);
}

std::string TuningDb::describe() const {
  std::string out = path_.string();
  if (remote_) out += fmt::format(" in front of {}", remote_->where());
  if (system_) out += fmt::format(" over the system DB {}", system_->path().string());
  return out;
}

}  // namespace gf

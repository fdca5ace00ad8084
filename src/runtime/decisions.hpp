#pragma once
// What the runtimes take from the tuning DB: a stored choice, while its backend is in this build,
// available, and at the version that made it. Anything else falls back, with one warning.
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "core/log.hpp"
#include "gemmforge/backend.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/tuning_db.hpp"

namespace gf::runtime {

// The tuning DB of a runtime (TuningDb::open: the path or redis:// URL given, else GEMMFORGE_DB's,
// and GEMMFORGE_SYSTEM_DB), or none (with one warning) when it cannot be opened: a damaged or
// foreign file must not stop dispatch, which falls back to the defaults.
inline std::unique_ptr<TuningDb> open_db_or_none(const std::string& where, const std::string& device) {
  try {
    return TuningDb::open(where, device);
  } catch (const Error& e) {
    log().warn("{}; running without tuned decisions (the defaults) until it is repaired", e.what());
    return nullptr;
  }
}

template <class Problem>
std::optional<Candidate> stored_choice(const TuningDb* db, const std::string& key) {
  if (!db) return std::nullopt;
  auto d = db->decision(key);
  if (!d) return std::nullopt;
  auto backend = find_backend<Problem>(d->backend);
  std::string why;
  if (d->family != Problem::kFamily)
    why = fmt::format("the DB holds a {} decision under this key", d->family);
  else if (!backend)
    why = fmt::format("the DB chose backend {}, which this build lacks", d->backend);
  else if (std::string missing = backend->unavailable(); !missing.empty())
    why = fmt::format("the DB chose backend {}, which is unavailable here ({})", d->backend, missing);
  else if (backend->version() != d->backend_version)
    why = fmt::format("the DB's choice was made by {} {}, this is {}", d->backend, d->backend_version,
                      backend->version());
  if (why.empty()) return Candidate{d->backend, d->candidate, d->config};
  log().warn("{}: {}; using the default until it is tuned again (gemmforge tune)", key, why);
  return std::nullopt;
}

}  // namespace gf::runtime

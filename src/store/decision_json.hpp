#pragma once
// A decision (and what was measured to choose it) as JSON, one form for every place decisions
// travel: `db export`/`import`, the remote store, a JSON system DB. Reading checks every field:
// a damaged or foreign entry is refused with a one-line reason, never half-read.
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "gemmforge/tuning_db.hpp"

namespace gf::store {

// The decision's fields and its device fingerprint.
nlohmann::json decision_json(const Decision& d, const std::string& device);
// The (device, decision) of decision_json's form. Throws gf::Error saying what is wrong: a field
// missing or of the wrong type, an unknown family or search level, a problem key that is not the
// canonical key this gemmforge writes.
std::pair<std::string, Decision> decision_from_json(const nlohmann::json& e);

nlohmann::json measurements_json(const std::vector<Measurement>& ms);
// Throws gf::Error as decision_from_json does; each measurement is of `problem`.
std::vector<Measurement> measurements_from_json(const nlohmann::json& j, const std::string& problem);

}  // namespace gf::store

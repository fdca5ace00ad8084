#include <nanobind/stl/function.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <nlohmann/json.hpp>

#include "gemmforge/device.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/tuner.hpp"
#include "python/bindings.hpp"

namespace nb = nanobind;

// Results cross as JSON text, which the package turns into dicts: one schema for the CLI's --json,
// the DB's dump and Python.
namespace gf::python {
namespace {

nlohmann::json measurement_json(const Measurement& m) {
  return {{"backend", m.backend}, {"candidate", m.candidate}, {"us", m.us},
          {"graph_us", m.graph_us}, {"rate", m.rate}, {"verified", m.verified},
          {"rel_err", m.rel_err}, {"compile_seconds", m.compile_seconds}, {"error", m.error}};
}

nlohmann::json tune_json(const TuneResult& r) {
  const Decision& d = r.decision;
  nlohmann::json ms = nlohmann::json::array();
  for (const auto& m : r.measurements) ms.push_back(measurement_json(m));
  return {{"problem", r.problem},   {"family", d.family},   {"backend", d.backend},
          {"candidate", d.candidate}, {"config", d.config}, {"us", d.us},
          {"rate", d.rate},         {"search", d.search},   {"backend_version", d.backend_version},
          {"from_db", r.from_db},   {"seconds", r.seconds}, {"skipped", r.skipped},
          {"compile_seconds", r.compile_seconds}, {"verify_seconds", r.verify_seconds},
          {"race_seconds", r.race_seconds},     {"alone_us", r.alone_us},
          {"measurements", ms}};
}

nlohmann::json bench_json(const BenchResult& b) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : b.rows) {
    nlohmann::json j = measurement_json(row.measurement);
    j["backend"] = row.backend;
    j["candidate"] = row.candidate.name;
    j["chosen"] = row.chosen;
    j["round_us"] = row.round_us;
    j["round_graph_us"] = row.round_graph_us;
    rows.push_back(std::move(j));
  }
  return {{"tuned", tune_json(b.tuned)}, {"rows", rows}};
}

// The tuner calls progress from its own threads: the callback takes the GIL, and an exception it
// raises is reported, not thrown through C++.
std::function<void(const std::string&, int, int)> guarded(nb::object callback) {
  if (callback.is_none()) return {};
  return [callback](const std::string& what, int done, int total) {
    nb::gil_scoped_acquire gil;
    try {
      callback(what, done, total);
    } catch (nb::python_error& e) {
      e.discard_as_unraisable("gemmforge progress callback");
    }
  };
}

struct PyTuner {
  std::unique_ptr<Tuner> tuner;
  nb::object progress;  // kept alive while the tuner may call it
};

// tune and bench for one family's problems (overloads Python picks by the argument's type).
template <class Problem>
void bind_family(nb::class_<PyTuner>& c) {
  c.def(
       "tune", [](PyTuner& t, const Problem& p) { return tune_json(t.tuner->tune(p)).dump(); }, nb::arg("problem"),
       Release())
      .def(
          "bench", [](PyTuner& t, const Problem& p) { return bench_json(t.tuner->bench(p)).dump(); },
          nb::arg("problem"), Release())
      .def(
          "prefetch", [](PyTuner& t, const Problem& p) { t.tuner->prefetch(p); }, nb::arg("problem"),
          "Lists and compiles the problem's candidates in the background, for a later tune or bench");
}

}  // namespace

void bind_tuner(nb::module_& m) {
  auto tuner =
      nb::class_<PyTuner>(m, "Tuner", "Tunes GEMMs and row ops into the DB (compiles here, measures in a worker)");
  tuner.def(
          "__init__",
          [](PyTuner* t, const std::vector<std::string>& backends, const std::string& search, bool force,
             bool use_cache, const std::string& db, const std::string& worker_exe, double timeout_s, int jobs,
             nb::object progress) {
            TuneOptions o;
            o.backends = backends;
            o.search.level = parse_search(search);
            o.force = force;
            o.use_cache = use_cache;
            o.db_path = db;
            o.worker_exe = worker_exe;
            o.candidate_timeout_s = timeout_s;
            o.compile_jobs = jobs;
            o.progress = guarded(progress);
            new (t) PyTuner{std::make_unique<Tuner>(std::move(o)), progress};
          },
          nb::arg("backends") = std::vector<std::string>{}, nb::arg("search") = "fast", nb::arg("force") = false,
          nb::arg("use_cache") = true, nb::arg("db") = "", nb::arg("worker_exe") = "",
          nb::arg("candidate_timeout_s") = 60.0, nb::arg("compile_jobs") = 0, nb::arg("progress") = nb::none())
      .def("device_fingerprint", [](PyTuner& t) { return t.tuner->db().device(); });
  bind_family<GemmProblem>(tuner);
  bind_family<RowOpSpec>(tuner);

  m.def(
      "device",
      [](int ordinal) {
        const DeviceInfo d = DeviceInfo::query(ordinal);
        return nlohmann::json{{"present", d.present},
                              {"absent_reason", d.absent_reason},
                              {"name", d.name},
                              {"sm_count", d.sm_count},
                              {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
                              {"l2_bytes", d.l2_bytes},
                              {"memory_bytes", d.global_mem_bytes},
                              {"driver_version", d.driver_version},
                              {"fingerprint", d.present ? d.fingerprint() : ""}}
            .dump();
      },
      nb::arg("ordinal") = 0, "The GPU as gemmforge sees it (JSON text)");
  // `path` below is what --db takes: a file, a redis:// URL, or "" (GEMMFORGE_DB, else the default).
  m.def(
      "db_local_path", [](const std::string& path) { return TuningDb::local_path(path).string(); }, nb::arg("path"),
      "The local DB file that path names");
  m.def(
      "db_dump", [](const std::string& path) { return TuningDb::open(path, "")->dump().dump(); }, nb::arg("path"),
      Release(), "Every readable decision of every device in the local DB (JSON text)");
  m.def(
      "db_export", [](const std::string& path) { return TuningDb::open(path, "")->export_json().dump(); },
      nb::arg("path"), Release(), "The local DB's decisions in the versioned export format (JSON text)");
  m.def(
      "db_import",
      [](const std::string& path, const std::string& text) {
        auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
        GF_CHECK(!j.is_discarded(), "the tuning export is not JSON");
        return TuningDb::open(path, "")->import_json(j);
      },
      nb::arg("path"), nb::arg("export_json"), Release(), "Stores an export's decisions; returns how many");
  m.def(
      "db_clear", [](const std::string& path) { return TuningDb::open(path, "")->clear(); }, nb::arg("path"),
      Release(), "Deletes every decision of the local DB; returns how many");
}

}  // namespace gf::python

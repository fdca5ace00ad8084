#pragma once
// The backend contract. A backend proposes candidates for a problem, compiles them (without a
// GPU where it can), and builds launchable kernels. Candidates are plain data (a name that
// encodes every parameter, and a JSON config), so they cross process boundaries and live in the
// tuning DB.
#include <cuda_runtime_api.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gemmforge/compile_report.hpp"
#include "gemmforge/device.hpp"
#include "gemmforge/problem.hpp"

namespace gf {


struct Candidate {
  std::string backend;
  std::string name;  // encodes every parameter in a fixed order; unique within the backend
  nlohmann::json config;
  std::string id() const { return backend + ":" + name; }
};
inline void to_json(nlohmann::json& j, const Candidate& c) {
  j = {{"backend", c.backend}, {"name", c.name}, {"config", c.config}};
}
inline void from_json(const nlohmann::json& j, Candidate& c) {
  c.backend = j.at("backend").get<std::string>();
  c.name = j.at("name").get<std::string>();
  c.config = j.at("config");
}

enum class Search { fast, normal, exhaustive };
std::string_view to_string(Search s);
Search parse_search(std::string_view s);  // fast | default | exhaustive; throws gf::Error

struct SearchOptions {
  Search level = Search::normal;
  int top_k = 0;  // cuBLASLt heuristic results to take; 0: by level (4, 16, 64)
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void launch(const GemmArgs& args, cudaStream_t stream) = 0;
  virtual size_t workspace_bytes() const { return 0; }
};


class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Version of the library or compiler behind it; part of the tuning DB's device fingerprint.
  virtual std::string version() const = 0;
  // "" when the backend's toolchain is present; else why it offers nothing.
  virtual std::string unavailable() const { return ""; }
  // "" when the backend can run the problem; else why not.
  virtual std::string supports(const GemmProblem& problem) const = 0;
  // The candidates, best first by the backend's own estimate. May throw gf::Error (e.g. a
  // backend that needs the GPU to enumerate, on a machine without one).
  virtual std::vector<Candidate> candidates(const GemmProblem& problem, const DeviceInfo& device,
                                            const SearchOptions& search) const = 0;
  // Compiles ahead of launching; needs no GPU; thread-safe. use_cache=false compiles even when
  // the kernel cache holds the binary. Backends with nothing to compile keep the default.
  virtual CompileReport compile(const GemmProblem&, const Candidate&, bool /*use_cache*/) const { return {}; }
  // A launchable kernel; needs the GPU; thread-safe; throws gf::Error.
  virtual std::unique_ptr<Kernel> build(const GemmProblem& problem, const Candidate& candidate) const = 0;
};

// Every backend of this build. The planted-fault test backend is included only when
// GEMMFORGE_PLANT_FAULTS=1.
const std::vector<std::shared_ptr<Backend>>& all_backends();
// nullptr when no backend has that name.
std::shared_ptr<Backend> find_backend(const std::string& name);
// "cublaslt=13.1.0.3,native=0.1.0+1a2b3c4d": joined with the device fingerprint, the DB key.
std::string backend_versions();
// The device fingerprint joined with the backends' versions: the tuning DB's device key.
std::string tuning_fingerprint(const DeviceInfo& device);

}  // namespace gf

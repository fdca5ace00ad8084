#pragma once
// The backend contract, the same for every kernel family: GEMMs (GemmProblem, launched with
// GemmArgs) and row ops (RowOpSpec, RowOpArgs). A backend proposes candidates for a problem,
// compiles them (without a GPU where it can), and builds launchable kernels. Candidates are plain
// data (a name that encodes every parameter, and a JSON config), so they cross process
// boundaries and live in the tuning DB.
#include <cuda_runtime_api.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gemmforge/compile_report.hpp"
#include "gemmforge/device.hpp"
#include "gemmforge/problem.hpp"
#include "gemmforge/rowop.hpp"

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
  int top_k = 0;  // at most this many candidates a backend (cuBLASLt: heuristic results); 0: by level
  // The operand pointers' guaranteed alignment in bytes, a power of two: a backend offers only
  // kernels that accept it. Whole tensors are 256-byte aligned; views into them may be less.
  size_t alignment = 256;
};

// A launchable kernel of the family whose launches take Args.
template <class Args>
class KernelOf {
 public:
  virtual ~KernelOf() = default;
  // Enqueues one launch; never allocates, synchronizes or compiles, so it may be captured in a
  // CUDA graph; thread-safe (launches on several streams at once need their own workspaces).
  virtual void launch(const Args& args, cudaStream_t stream) = 0;
  // Scratch a launch needs in args.workspace: zero before the kernel's first launch on it, and
  // left zero again where the kernel needs zeros (split-K tile counters).
  virtual size_t workspace_bytes() const { return 0; }
  // The alignment in bytes every pointer of a launch must have (1: any its types allow).
  virtual size_t alignment() const { return 1; }
};

template <class Problem>
class BackendOf {
 public:
  using Kernel = KernelOf<typename Problem::Args>;
  virtual ~BackendOf() = default;
  virtual std::string name() const = 0;
  // Version of the library, compiler or templates behind it: a stored decision is used only while
  // its backend's version is the one that chose it.
  virtual std::string version() const = 0;
  // "" when the backend's toolchain is present; else why it offers nothing.
  virtual std::string unavailable() const { return ""; }
  // What `gemmforge doctor` adds after "available": the toolchain found or what it lacks; "" for none.
  virtual std::string doctor_note() const { return ""; }
  // "" when the backend can run the problem; else why not.
  virtual std::string supports(const Problem& problem) const = 0;
  // The candidates, best first by the backend's own estimate. May throw gf::Error (e.g. a
  // backend that needs the GPU to enumerate, on a machine without one).
  virtual std::vector<Candidate> candidates(const Problem& problem, const DeviceInfo& device,
                                            const SearchOptions& search) const = 0;
  // Compiles ahead of launching; needs no GPU; thread-safe. use_cache=false compiles even when
  // the kernel cache holds the binary. Backends with nothing to compile keep the default.
  virtual CompileReport compile(const Problem&, const Candidate&, bool /*use_cache*/) const { return {}; }
  // A launchable kernel; needs the GPU; thread-safe; throws gf::Error.
  virtual std::unique_ptr<Kernel> build(const Problem& problem, const Candidate& candidate) const = 0;
};

using Kernel = KernelOf<GemmArgs>;
using Backend = BackendOf<GemmProblem>;
using RowOpKernel = KernelOf<RowOpArgs>;
using RowOpBackend = BackendOf<RowOpSpec>;

// Every backend of the family in this build; the planted-fault test backends are included only
// when GEMMFORGE_PLANT_FAULTS=1.
template <class Problem>
const std::vector<std::shared_ptr<BackendOf<Problem>>>& backends();
template <>
const std::vector<std::shared_ptr<Backend>>& backends<GemmProblem>();
template <>
const std::vector<std::shared_ptr<RowOpBackend>>& backends<RowOpSpec>();
// The family's backend of that name, or nullptr.
template <class Problem>
std::shared_ptr<BackendOf<Problem>> find_backend(std::string_view name);
// Every backend name of every family, for messages: "cublaslt, native, triton, unfused".
std::string backend_names();

}  // namespace gf

#pragma once
// The Python side of the backends that compile with Python toolchains (Triton, CuTe DSL):
// gemmforge's python/ files, embedded in the binary and written out on first use, run under
// python3 (or GEMMFORGE_PYTHON) as pools of persistent compile workers, so Python and the
// toolchain start once per worker.
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gemmforge/compile_report.hpp"

namespace gf::jit {

struct PythonSources {
  std::filesystem::path dir;  // home_dir()/python/<hash>: python/ as embedded
  std::string hash;           // of every embedded Python file: part of each cache key
  std::string error;          // why they could not be written, or ""
  // The hash of the named files (paths under python/): part of the cache keys of the kernels only
  // they shape, so that a change elsewhere in python/ leaves those kernels cached. Throws gf::Error
  // for a file that is not embedded.
  std::string hash_of(std::initializer_list<std::string_view> files) const;
};
// Writes the files out once. Never throws.
const PythonSources& python_sources();

// The interpreter the workers run: $GEMMFORGE_PYTHON, else python3.
std::string python();

// The installed version of a Python distribution ("triton", "nvidia-cutlass-dsl"), asked of the
// package metadata (much faster than importing it); "" with *error set when Python or the
// package is missing. Never throws.
std::string python_package_version(const std::string& distribution, std::string* error);
// The versions of several distributions from one Python start, in their order: "" for each one
// missing; all "" with *error set when Python did not run. Never throws.
std::vector<std::string> python_package_versions(const std::vector<std::string>& distributions, std::string* error);

// Workers running python/<script> (e.g. "gemmforge_triton/worker.py"), started on demand up to one
// per core. Thread-safe; a worker that crashes or exceeds the timeout is replaced.
class PythonPool {
 public:
  explicit PythonPool(std::string script);
  ~PythonPool();
  // Sends one request to a free worker and waits for its reply.
  nlohmann::json call(const nlohmann::json& request, double timeout_s);
  // A request whose worker writes its product to request["path"]: a path under dir of this
  // process and call alone (two processes compiling one config must not share it), read back and
  // removed whatever happens. bytes is empty unless the reply is ok.
  struct FileReply {
    nlohmann::json reply;
    std::string bytes;
  };
  FileReply call_writing(nlohmann::json request, const std::filesystem::path& dir, const std::string& name,
                         double timeout_s);

 private:
  struct State;
  std::string script_;
  std::unique_ptr<State> state_;
};

// A kernel compiled by a Python worker, through the kernel cache: key's entry when use_cache finds
// one; else, unless why_not says this machine cannot compile it, the pool's worker compiles request
// (its reply becomes the entry's meta). Never throws for a failed compile: the report says why.
struct PythonArtifact {
  CompileReport report;
  std::string bytes;
  nlohmann::json meta;
};
PythonArtifact compile_through_cache(PythonPool& pool, const nlohmann::json& request, const std::string& key,
                                     bool use_cache, const std::string& why_not, double timeout_s = 300.0);

}  // namespace gf::jit

#pragma once
// The Python side of the Triton backend: gemmforge's templates and compile worker (embedded in
// the binary, written out on first use) run under python3 with Triton installed. Compiles go to
// a pool of persistent worker processes, so Python and Triton start once per worker.
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "jit/python_pool.hpp"

namespace gf::triton_backend {

struct PythonEnv {
  std::string worker_script;   // .../gemmforge_triton/worker.py
  std::string triton_version;  // "" when unavailable
  std::string error;           // why the backend is unavailable, or ""
  std::string sources_hash;    // of the embedded Python files: part of every cache key
};

// Probes once (python3 from PATH, or GEMMFORGE_PYTHON): writes the worker out and asks Triton's
// version. Never throws.
const PythonEnv& python_env();

// Sends one request to a free worker (starting up to one per core) and waits for the reply.
// Thread-safe. A worker that crashes or exceeds the timeout is replaced.
// The worker writes the cubin to a temporary file in the kernel cache's folder, read back here.
jit::PythonPool::FileReply compile_in_pool(const nlohmann::json& request, const std::string& name, double timeout_s);

}  // namespace gf::triton_backend

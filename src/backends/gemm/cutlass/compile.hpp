#pragma once
// Compiling a CUTLASS unit: nvcc in a worker process (one at a time per core, under a timeout)
// builds the unit's shared object, which the kernel cache keeps under a key of the instances'
// names, the unit template, CUTLASS's version, nvcc's version and the flags.
#include <filesystem>
#include <string>
#include <vector>

#include "backends/gemm/cutlass/space.hpp"
#include "gemmforge/compile_report.hpp"

namespace gf::cutlass_backend {

// nvcc and the CUTLASS headers, probed once; never throws.
struct Toolchain {
  std::string nvcc;                // path; "" when none was found
  std::string nvcc_version;        // the last line of `nvcc --version`
  std::string include_dir;         // CUTLASS's headers (cute/, cutlass/); "" when none were found
  std::string nvcc_error;          // why nvcc cannot be used, or ""
  std::string headers_error;       // why the headers cannot be used, or ""
  std::vector<std::string> flags;  // every flag but the include folders and the file names
};
const Toolchain& toolchain();

// nvcc's version, the flags, CUTLASS's version and the unit template's headers: part of every
// cache key and of the backend's version.
uint64_t toolchain_hash();
// The unit's key in the kernel cache.
std::string cache_key(const Unit& u);

struct CompiledUnit {
  CompileReport report;
  std::filesystem::path library;  // the shared object to dlopen, when report.ok
};

// Thread-safe: concurrent calls for one unit share one nvcc run (the ones that waited report it
// cached). use_cache=false compiles even when the cache holds the unit. GEMMFORGE_DUMP=DIR keeps
// the unit's source, log and nvcc command there; GEMMFORGE_CUTLASS_TIMEOUT (seconds, default
// 1800) bounds one nvcc run.
CompiledUnit compile_unit(const Unit& u, bool use_cache);

}  // namespace gf::cutlass_backend

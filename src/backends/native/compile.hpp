#pragma once
// Compiling a native candidate: NVRTC in process, through the content-addressed kernel cache.
#include <string>

#include "backends/native/config.hpp"

namespace gf::native {

struct Compiled {
  CompileReport report;
  std::string cubin;
};

// Thread-safe. The cache key covers the generated source, every header, the compile options
// and the NVRTC version. GEMMFORGE_FAIL_ON_SPILL=1 fails kernels that spill registers;
// GEMMFORGE_DUMP=DIR writes each compiled kernel's source, log and cubin there.
Compiled compile_candidate(const NativeConfig& c, const GemmProblem& p, bool use_cache);

}  // namespace gf::native

#pragma once
// Compiling a native candidate: its instantiation source through the JIT path.
#include "backends/gemm/native/space.hpp"
#include "jit/compile.hpp"

namespace gf::native {

using Compiled = jit::Compiled;

// Thread-safe; see jit::compile for the cache and the knobs.
Compiled compile_candidate(const NativeConfig& c, const GemmProblem& p, bool use_cache);

}  // namespace gf::native

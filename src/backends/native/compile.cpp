#include "backends/native/compile.hpp"

#include "backends/native/codegen.hpp"

namespace gf::native {

Compiled compile_candidate(const NativeConfig& c, const GemmProblem& p, bool use_cache) {
  return jit::compile(c.name(p), instantiation_source(c, p), use_cache);
}

}  // namespace gf::native

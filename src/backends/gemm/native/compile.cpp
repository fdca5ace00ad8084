#include "backends/gemm/native/compile.hpp"

#include "backends/gemm/native/codegen.hpp"

namespace gf::native {

Compiled compile_candidate(const NativeConfig& c, const GemmProblem& p, bool use_cache) {
  return jit::compile(c.name(p), instantiation_source(c, p), use_cache);
}

}  // namespace gf::native

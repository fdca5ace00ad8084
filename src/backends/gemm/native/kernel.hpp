#pragma once
#include <memory>
#include <string>

#include "backends/gemm/native/space.hpp"

namespace gf::native {
// A launchable kernel from a compiled cubin. Needs the GPU. Not to be launched on two streams at
// once (split-K scratch is per kernel).
std::unique_ptr<Kernel> load_kernel(const NativeConfig& c, const GemmProblem& p, const std::string& cubin);
}  // namespace gf::native

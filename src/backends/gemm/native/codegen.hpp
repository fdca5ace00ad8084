#pragma once
// The instantiation source NVRTC compiles for one candidate: a Cfg struct of named constants and
// an extern "C" kernel that runs Gemm<Cfg>, named after the candidate (kernel_symbol) so that
// profilers show which config ran. Everything else lives in kernels/.
#include <string>
#include <utility>
#include <vector>

#include "backends/gemm/native/space.hpp"

namespace gf::native {

std::string instantiation_source(const NativeConfig& c, const GemmProblem& p);
// The kernel's symbol: the candidate's name with every character a C identifier cannot hold
// (the '.' of alpha0.5) replaced by '_'.
std::string kernel_symbol(const NativeConfig& c, const GemmProblem& p);

}  // namespace gf::native

#pragma once
// The instantiation source NVRTC compiles for one candidate: a Cfg struct of named constants and
// an extern "C" kernel that runs Gemm<Cfg>. Everything else lives in kernels/.
#include <string>
#include <utility>
#include <vector>

#include "backends/native/config.hpp"

namespace gf::native {

constexpr const char* kKernelName = "gf_gemm";

std::string instantiation_source(const NativeConfig& c, const GemmProblem& p);

}  // namespace gf::native

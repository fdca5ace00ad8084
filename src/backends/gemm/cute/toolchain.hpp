#pragma once
// The CuTe DSL toolchain: the pinned nvidia-cutlass-dsl, whether this machine can compile with it,
// and the backend's version (the pin and gemmforge's templates: the same on a machine that
// compiles and on one that only runs from the kernel cache).
#include <string>

namespace gf::cute_backend {

inline constexpr const char* kDslPin = "4.8.1";  // python/gemmforge_cute/build.py pins the same

// Why this machine cannot compile CuTe DSL kernels (no python3, no or another DSL), or "".
// Asked once per process.
const std::string& compile_unavailable();
std::string version_string();

}  // namespace gf::cute_backend

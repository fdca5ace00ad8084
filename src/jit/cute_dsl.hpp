#pragma once
// The CuTe DSL toolchain the cute backends (GEMMs, row ops) share: the pinned nvidia-cutlass-dsl,
// whether this machine can compile with it, its compile workers, and the versions that key the
// kernels (the pin and the Python files that shape them: the same on a machine that compiles and
// on one that only runs from the kernel cache).
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "jit/python_pool.hpp"
#include "jit/shared_object.hpp"

namespace gf::jit::cute_dsl {

inline constexpr const char* kDslPin = "4.8.1";    // python/gemmforge_cute/export.py pins the same
inline constexpr const char* kDslFlavor = "cu12";  // its libraries' CUDA: their PTX assembles with ptxas 13.0

// Why this machine cannot compile CuTe DSL kernels (no python3, no or another DSL), or "".
// Asked once per process.
const std::string& compile_unavailable();
// doctor's note for either cute backend: what it compiles with, or that it runs from the cache alone.
std::string doctor_note();
// "4.8.1+<hash of files>", files being paths under python/ (the worker's own are added).
std::string version_string(std::initializer_list<std::string_view> files);
// Compiles request in a CuTe DSL worker (python/gemmforge_cute/worker.py) through the kernel cache
// (key); on a machine that cannot compile, a miss is a failed report naming what to do.
PythonArtifact compile(const nlohmann::json& request, const std::string& key, const std::string& what, bool use_cache);

// A compiled kernel's shared object, loaded: its shim's ABI (gf_cute_abi) checked against the
// launcher's and its module loaded onto the GPU (gf_cute_load); entry() finds the shim's launch
// function. Throws gf::Error naming `what` ("kernel wgmma_128x256_c2x1", "row op ...").
class LoadedKernel {
 public:
  LoadedKernel(const std::string& bytes, int abi, const std::string& what);
  template <class Fn>
  Fn entry(const char* name) const {
    return so_.function<Fn>(name);
  }

 private:
  SharedObject so_;
};

}  // namespace gf::jit::cute_dsl

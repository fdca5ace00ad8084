#include "jit/cute_dsl.hpp"

#include <fmt/format.h>

#include "core/hash.hpp"
#include "gemmforge/error.hpp"

namespace gf::jit::cute_dsl {

const std::string& compile_unavailable() {
  static const std::string why = [] {
    if (const auto& s = python_sources(); !s.error.empty()) return s.error;
    // One Python start for both: each costs ~40 ms, in every process that compiles.
    std::string error;
    const auto v = python_package_versions({"nvidia-cutlass-dsl", "nvidia-cutlass-dsl-libs-cu13"}, &error);
    if (!error.empty()) return error;
    if (v[0].empty()) return fmt::format("nvidia-cutlass-dsl is not installed for {}", python());
    if (v[0] != kDslPin) return fmt::format("nvidia-cutlass-dsl {} is installed; gemmforge pins {}", v[0], kDslPin);
    // The [cu13] extra installs its libraries beside the default cu12 ones, and the DSL then loads
    // them where the driver allows; their PTX (9.4) is newer than CUDA 13.0's ptxas takes.
    if (!v[1].empty())
      return std::string(
          "nvidia-cutlass-dsl-libs-cu13 is installed (the [cu13] extra), whose PTX 9.4 ptxas 13.0 "
          "rejects: pip uninstall nvidia-cutlass-dsl-libs-cu13");
    return std::string();
  }();
  return why;
}

std::string doctor_note() {
  const std::string& why = compile_unavailable();
  return why.empty() ? fmt::format("compiles with nvidia-cutlass-dsl {}, {} flavor, for sm_90a", kDslPin, kDslFlavor)
                     : "runs what the kernel cache holds; cannot compile here: " + why;
}

std::string version_string(std::initializer_list<std::string_view> files) {
  const PythonSources& s = python_sources();
  const std::string worker = s.hash_of({"worker_loop.py", "gemmforge_cute/worker.py", "gemmforge_cute/export.py"});
  return fmt::format("{}+{}", kDslPin, hex64(fnv1a(s.hash_of(files), fnv1a(worker))).substr(0, 8));
}

PythonArtifact compile(const nlohmann::json& request, const std::string& key, const std::string& what, bool use_cache) {
  static PythonPool pool("gemmforge_cute/worker.py");
  const std::string& why = compile_unavailable();
  return compile_through_cache(
      pool, request, key, use_cache,
      why.empty() ? ""
                  : fmt::format("not compiled: {} is not in the kernel cache and this machine cannot compile it "
                                "({}); run gemmforge compile -b cute on a machine with nvidia-cutlass-dsl {} and "
                                "bring its kernel cache",
                                what, why, kDslPin));
}

LoadedKernel::LoadedKernel(const std::string& bytes, int abi, const std::string& what) : so_(bytes) {
  const int found = so_.function<int (*)()>("gf_cute_abi")();
  GF_CHECK(found == abi, "CuTe DSL {} has ABI {}, the launcher {}: compile it again", what, found, abi);
  const int loaded = so_.function<int (*)()>("gf_cute_load")();
  GF_CHECK(loaded == 0, "CuTe DSL {} did not load onto the GPU (CUDA error {})", what, loaded);
}

}  // namespace gf::jit::cute_dsl

#include "backends/gemm/cute/toolchain.hpp"

#include <fmt/format.h>

#include "jit/python_pool.hpp"

namespace gf::cute_backend {

const std::string& compile_unavailable() {
  static const std::string why = [] {
    if (const auto& s = jit::python_sources(); !s.error.empty()) return s.error;
    std::string error;
    std::string v = jit::python_package_version("nvidia-cutlass-dsl", &error);
    if (v.empty()) return error;
    if (v != kDslPin) return fmt::format("nvidia-cutlass-dsl {} is installed; gemmforge pins {}", v, kDslPin);
    return std::string();
  }();
  return why;
}

std::string version_string() { return fmt::format("{}+{}", kDslPin, jit::python_sources().hash.substr(0, 8)); }

}  // namespace gf::cute_backend

#pragma once
// Files embedded in the binary at build time (cmake/embed.cmake): kernels/*.cuh for NVRTC and
// workloads/*.config.json, keyed by their path in the repository.
#include <map>
#include <string>
#include <string_view>

namespace gf::embedded {
const std::map<std::string, std::string_view>& files();
}

#pragma once
// NVRTC: CUDA C++ source to an sm_90a cubin, in process, with the ptxas resource report.
#include <string>
#include <utility>
#include <vector>

namespace gf::cuda {

struct CompileResult {
  bool ok = false;
  std::string cubin;  // bytes
  std::string ptx;    // the PTX the cubin was assembled from
  std::string log;    // compiler diagnostics and the ptxas report
  double seconds = 0;
  int registers = -1;    // from the ptxas report, for the kernel that was compiled
  int spill_bytes = -1;  // spill stores + spill loads
  int stack_bytes = -1;
};

struct CompileOptions {
  std::string arch = "sm_90a";
  std::vector<std::pair<std::string, std::string>> headers;  // (include name, source)
  std::vector<std::string> extra;                            // e.g. -DBLOCK_M=128
  bool line_info = false;
  // Every flag NVRTC is given, in order: what a cache key must cover.
  std::vector<std::string> flags() const;
};

// Never throws for a compile error: ok is false and log says why.
CompileResult nvrtc_compile(const std::string& source, const std::string& name, const CompileOptions& options);
// "13.0"
std::string nvrtc_version();

}  // namespace gf::cuda

#pragma once
// Run-time compilation of device code from kernels/ through NVRTC and the content-addressed
// kernel cache. Shared by every JIT user (the native GEMM templates, the memory-bound ops).
#include <string>
#include <utility>
#include <vector>

#include "gemmforge/compile_report.hpp"

namespace gf::jit {

struct Compiled {
  CompileReport report;
  std::string cubin;
};

// kernels/*.cuh as NVRTC headers: (include name relative to kernels/, text).
const std::vector<std::pair<std::string, std::string>>& kernel_headers();
// A hash of every header, every compile flag and the NVRTC version: part of each cache key and of
// the backends' versions.
uint64_t toolchain_hash();

// ptxas's performance notes in a compile log, a line each (C75xx: wgmma serialized, setmaxnreg
// ignored, ...): kept beside the cubin, so that a cache hit reports them as a fresh compile does.
std::string performance_notes(const std::string& log);

// Compiles `source` (which includes headers from kernels/) for sm_90a. Thread-safe. The cache key
// is `name` plus a hash of the source and toolchain_hash(). GEMMFORGE_FAIL_ON_SPILL=1 fails
// kernels that spill; GEMMFORGE_DUMP=DIR writes each compiled kernel's source, log, PTX, cubin and
// the nvcc command that builds it again there.
Compiled compile(const std::string& name, const std::string& source, bool use_cache);

}  // namespace gf::jit

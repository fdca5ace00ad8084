#pragma once
// The Triton toolchain the triton backends (GEMMs, row ops) share: Triton in python3, its compile
// workers (python/gemmforge_triton/worker.py), and a compiled kernel as the launchers see it (the
// cubin loaded and its metadata checked against the Triton 3.6 kernel ABI: the runtime arguments,
// then the global and profile scratch pointers; 32 x num_warps threads; num_ctas-wide clusters).
#include <cuda.h>

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/module.hpp"
#include "jit/python_pool.hpp"

namespace gf::jit::triton {

struct Env {
  std::string version;  // Triton's, "" when unavailable
  std::string error;    // why the backends are unavailable, or ""
};
// Probes once (python3 from PATH, or GEMMFORGE_PYTHON). Never throws.
const Env& env();
// The hash of the Python files (paths under python/) that shape a family's kernels, with the
// worker's own: part of their cache keys.
std::string sources_hash(std::initializer_list<std::string_view> files);
// Compiles request in a worker through the kernel cache (key). The candidate was listed under
// Triton listed_version: a compile under another is an error (tune again).
PythonArtifact compile(const nlohmann::json& request, const std::string& key, const std::string& listed_version,
                       bool use_cache);

class LoadedKernel {
 public:
  // Throws gf::Error when the metadata's Triton version or argument list differ from the
  // launcher's, or the kernel wants a cooperative or PDL launch. what names it in messages.
  LoadedKernel(const PythonArtifact& compiled, const std::vector<std::string>& abi_args, const std::string& version,
               const std::string& what);
  CUfunction function() const { return fn_; }
  unsigned threads() const { return threads_; }
  unsigned shared_bytes() const { return shared_; }
  int num_ctas() const { return num_ctas_; }
  // Triton's scratch (device-built tensor maps, profiling) for `programs` programs: global scratch
  // first (256-byte aligned), then profile scratch.
  size_t global_scratch_bytes(size_t programs) const;
  size_t profile_scratch_bytes(size_t programs) const;
  // Launches programs x num_ctas CTAs, the runtime arguments then the two scratch pointers carved
  // from workspace (which must hold both).
  void launch(unsigned programs, std::vector<void*> args, void* workspace, CUstream stream) const;

 private:
  nlohmann::json meta_;
  cuda::Module module_;
  CUfunction fn_ = nullptr;
  unsigned threads_ = 0, shared_ = 0;
  int num_ctas_ = 1;
};

}  // namespace gf::jit::triton

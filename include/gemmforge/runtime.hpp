#pragma once
// Dispatch at run time: a problem goes to the kernel the tuning DB chose for it on this device.
// With no decision stored, it falls back to cuBLASLt's default algorithm and warns once per
// problem. Kernels are built on first use and kept.
#include <cuda_runtime_api.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

#include "gemmforge/backend.hpp"

namespace gf {

struct RuntimeOptions {
  std::filesystem::path db_path;  // empty: TuningDb::default_path()
};

class Runtime {
 public:
  explicit Runtime(RuntimeOptions options = {});
  ~Runtime();
  // D = epilogue(A B^T) as the problem says, on `stream`. Throws gf::Error on bad input.
  void gemm(const GemmProblem& problem, const GemmArgs& args, cudaStream_t stream = nullptr);
  // The candidate gemm() runs for the problem, as "backend:name" (builds it if needed).
  std::string choice(const GemmProblem& problem);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gf

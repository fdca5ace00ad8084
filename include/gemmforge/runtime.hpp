#pragma once
// Dispatch at run time: a problem goes to the kernel the tuning DB chose for it on this device.
// With no decision stored, it falls back to cuBLASLt's default algorithm (cuBLASLt's plain GEMM
// and a separate epilogue kernel, or the first-ranked native kernel, where cuBLASLt lacks the
// epilogue or the GEMM) and warns once per problem. Safe to call from many threads and streams at
// once, and inside CUDA graph capture once prepared:
//   - each problem's kernel is built once; concurrent first calls wait for that one build;
//   - each (problem, stream) gets its own zeroed workspace, so launches on different streams
//     never share scratch; no lock is held across a launch;
//   - operand pointers the chosen kernel cannot take (views less aligned than it needs) go to a
//     kernel that can, chosen once per alignment, with one warning;
//   - prepare() builds and allocates ahead, so that the calls it covers never compile, allocate or
//     synchronize. A first use during capture is an error, never an illegal call.
#include <cuda_runtime_api.h>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gemmforge/backend.hpp"

namespace gf {

struct RuntimeOptions {
  std::filesystem::path db_path;  // a path or a redis:// URL; empty: GEMMFORGE_DB, else TuningDb::default_path()
};

class Runtime {
 public:
  explicit Runtime(RuntimeOptions options = {});
  ~Runtime();
  // D = epilogue(A B^T) as the problem says, on `stream`. Throws gf::Error on bad input. With
  // args.workspace null, the runtime's workspace for this problem and stream is used.
  void gemm(const GemmProblem& problem, const GemmArgs& args, cudaStream_t stream = nullptr);
  // Builds the problems' kernels and their workspaces on these streams (for 256-byte aligned
  // operands, as whole tensors are), before capturing calls in a CUDA graph.
  void prepare(const std::vector<GemmProblem>& problems, const std::vector<cudaStream_t>& streams = {nullptr});
  // The candidate gemm() runs for the problem, as "backend:name" (builds it if needed).
  std::string choice(const GemmProblem& problem);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gf

#pragma once
// A compiled row-op kernel, loaded and launched through the driver API, and the checks and
// fallbacks for the pointers it is handed.
#include <cuda_runtime_api.h>

#include <memory>
#include <string>

#include "backends/rowop/native/space.hpp"
#include "cuda/module.hpp"
#include "gemmforge/backend.hpp"
#include "jit/compile.hpp"

namespace gf::rowops {

class RowKernel final : public RowOpKernel {
 public:
  RowKernel(const RowOpSpec& spec, const RowConfig& config, const std::string& cubin);
  // Throws gf::Error for a null or misaligned pointer (see misaligned).
  void launch(const RowOpArgs& args, cudaStream_t stream) override;
  const RowConfig& config() const { return config_; }
  // CTAs launched: one per row part, or the resident clusters of a persistent (bulk) kernel.
  int64_t ctas() const { return grid_; }

 private:
  cuda::LaunchConfig launch_config(int64_t ctas) const;

  RowOpSpec spec_;
  RowConfig config_;
  cuda::Module module_;
  CUfunction fn_;
  int64_t grid_ = 0;            // CTAs
  int64_t hand_back_from_ = 0;  // bulk kernels: the first row that hands its L2 lines back
};

jit::Compiled compile_row_kernel(const RowOpSpec& s, const RowConfig& c, bool use_cache);
// Compiles (through the cache) and loads; throws gf::Error when the compile fails.
std::unique_ptr<RowKernel> load_row_kernel(const RowOpSpec& s, const RowConfig& c);
// Whether the pointers suit the config's vector width ("" when they do, else why not).
std::string misaligned(const RowOpSpec& s, const RowConfig& c, const RowOpArgs& a);
// c if the pointers suit it, else the first legal config (of any vector width) they suit: a
// correct, slower path. Throws gf::Error when none does (pointers not even element-aligned).
RowConfig config_for_pointers(const RowOpSpec& s, const RowConfig& c, const RowOpArgs& a);
// Checks the arguments the spec needs; throws gf::Error naming what is missing.
void check_args(const RowOpSpec& s, const RowOpArgs& a);

}  // namespace gf::rowops

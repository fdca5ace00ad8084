// gemmforge doctor: what this machine offers, and what is missing.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "cli/commands.hpp"
#include "cuda/nvrtc.hpp"
#include "gemmforge/backend.hpp"
#include "gemmforge/paths.hpp"
#include "gemmforge/tuning_db.hpp"
#include "store/kernel_cache.hpp"

namespace gf::cli {
namespace {

void run_doctor() {
  auto line = [](const std::string& what, const std::string& value) { fmt::print("{:<14} {}\n", what, value); };
  DeviceInfo device = DeviceInfo::query();
  line("gemmforge", GF_VERSION);
  line("GPU", device.present ? device.describe() : "none: " + device.absent_reason);
  if (device.present && device.cc_major != 9)
    line("", "warning: gemmforge's native kernels target Hopper (sm_90a); this GPU is sm_" +
                 std::to_string(device.cc_major * 10 + device.cc_minor));
  int rt = 0;
  cudaRuntimeGetVersion(&rt);
  line("CUDA runtime", fmt::format("{}.{} (static)", rt / 1000, rt % 1000 / 10));
  auto probe = cuda::nvrtc_compile("extern \"C\" __global__ void probe(float* x) { x[0] = 1.0f; }", "probe.cu", {});
  line("NVRTC", fmt::format("{}: {}", cuda::nvrtc_version(),
                            probe.ok ? fmt::format("compiles for sm_90a ({:.2f} s for a probe kernel)", probe.seconds)
                                     : "FAILED: " + probe.log));
  auto report = [&](const auto& b, std::string_view family) {
    std::string why = b->unavailable(), note = why.empty() ? b->doctor_note() : "";
    line(fmt::format("{} {}", family, b->name()),
         b->version() + (why.empty() ? ": available" : ": unavailable: " + why) + (note.empty() ? "" : " (" + note + ")"));
  };
  for (const auto& b : backends<GemmProblem>()) report(b, "gemm");
  for (const auto& b : backends<RowOpSpec>()) report(b, "rowop");
  line("tuning DB", TuningDb::default_path().string());
  line("kernel cache", KernelCache::shared().dir().string());
  if (!device.present) fmt::print("\nNo GPU: tune and bench need one; candidates, compile and doctor work here.\n");
}

}  // namespace

void add_doctor(CLI::App& app) {
  app.add_subcommand("doctor", "GPU, driver, toolkit, NVRTC and backends: what works here and why not")
      ->callback(run_doctor);
}

}  // namespace gf::cli

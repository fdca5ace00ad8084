#include <mutex>
#include <unordered_map>

#include "core/log.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/ops.hpp"
#include "gemmforge/backend.hpp"
#include "gemmforge/tuning_db.hpp"
#include "backends/rowop/native/kernel.hpp"

namespace gf {

struct OpsRuntime::Impl {
  std::unique_ptr<TuningDb> db;
  std::mutex mu;
  std::unordered_map<std::string, std::unique_ptr<ops::RowKernel>> kernels;  // by config name

  const ops::RowKernel& kernel(const RowOpSpec& s, const ops::RowConfig& c) {
    std::string name = c.name(s);
    if (auto it = kernels.find(name); it != kernels.end()) return *it->second;
    jit::Compiled compiled = ops::compile_row_kernel(s, c, true);
    GF_CHECK(compiled.report.ok, "{} failed to compile:\n{}", name, compiled.report.log);
    return *kernels.emplace(name, std::make_unique<ops::RowKernel>(s, c, compiled.cubin)).first->second;
  }
};

OpsRuntime::OpsRuntime(const std::string& db_path) : impl_(std::make_unique<Impl>()) {
  DeviceInfo device = DeviceInfo::query();
  GF_CHECK(device.present, "gf::OpsRuntime needs a GPU: {}", device.absent_reason);
  impl_->db = std::make_unique<TuningDb>(db_path.empty() ? TuningDb::default_path() : std::filesystem::path(db_path),
                                         tuning_fingerprint(device));
}

OpsRuntime::~OpsRuntime() = default;

void OpsRuntime::run(const RowOpSpec& s, const RowOpArgs& args, cudaStream_t stream) {
  GF_CHECK(s.invalid_reason().empty(), "invalid op {}: {}", s.key(), s.invalid_reason());
  ops::check_args(s, args);
  std::lock_guard lock(impl_->mu);
  ops::RowConfig c = ops::default_config(s);
  if (auto d = impl_->db->decision(s.key())) {
    ops::RowConfig stored = ops::RowConfig::from_json(d->config);
    if (ops::illegal_reason(stored, s).empty()) c = stored;  // else a decision of an older gemmforge
  }
  // Pointers that do not suit the config (vector width, bulk copies) take a correct, slower one.
  c = ops::config_for_pointers(s, c, args);
  impl_->kernel(s, c).launch(args, stream);
}

}  // namespace gf

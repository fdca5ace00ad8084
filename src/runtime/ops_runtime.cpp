#include <mutex>
#include <unordered_map>

#include "backends/rowop/native/kernel.hpp"
#include "core/log.hpp"
#include "core/once.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/ops.hpp"
#include "gemmforge/tuning_db.hpp"
#include "runtime/decisions.hpp"
#include "runtime/record.hpp"

namespace gf {

struct OpsRuntime::Impl {
  std::unique_ptr<TuningDb> db;
  std::mutex mu;  // guards the maps, never a build or a launch
  // The tuned (or default) config of each op, looked up in the DB once.
  std::unordered_map<std::string, rowops::RowConfig> chosen;
  // Kernels by config name, each built once.
  struct Entry {
    Once built;
    std::unique_ptr<rowops::RowKernel> kernel;
  };
  std::unordered_map<std::string, std::shared_ptr<Entry>> kernels;

  rowops::RowConfig config(const RowOpSpec& s) {
    const std::string key = s.key();
    {
      std::lock_guard lock(mu);
      if (auto it = chosen.find(key); it != chosen.end()) return it->second;
    }
    rowops::RowConfig c = rowops::default_config(s);
    // Only the native row-op backend's configs run here (the planted faulty one is for tests).
    if (auto stored = runtime::stored_choice<RowOpSpec>(db.get(), key); stored && stored->backend == "native") {
      rowops::RowConfig tuned = rowops::RowConfig::from_json(stored->config);
      if (rowops::illegal_reason(tuned, s).empty()) c = tuned;
    } else if (!stored) {
      runtime::record_untuned(key);
    }
    std::lock_guard lock(mu);
    return chosen.emplace(key, c).first->second;
  }

  rowops::RowKernel& kernel(const RowOpSpec& s, const rowops::RowConfig& c) {
    std::shared_ptr<Entry> e;
    {
      std::lock_guard lock(mu);
      auto& slot = kernels[c.name(s)];
      if (!slot) slot = std::make_shared<Entry>();
      e = slot;
    }
    e->built.run([&] { e->kernel = rowops::load_row_kernel(s, c); });
    return *e->kernel;
  }
};

OpsRuntime::OpsRuntime(const std::string& db_path) : impl_(std::make_unique<Impl>()) {
  DeviceInfo device = DeviceInfo::query();
  GF_CHECK(device.present, "gf::OpsRuntime needs a GPU: {}", device.absent_reason);
  impl_->db = runtime::open_db_or_none(db_path, device.fingerprint());
}

OpsRuntime::~OpsRuntime() = default;

void OpsRuntime::run(const RowOpSpec& s, const RowOpArgs& args, cudaStream_t stream) {
  GF_CHECK(s.invalid_reason().empty(), "invalid op {}: {}", s.key(), s.invalid_reason());
  rowops::check_args(s, args);
  // Pointers that do not suit the config (vector width, bulk copies) take a correct, slower one.
  const rowops::RowConfig c = rowops::config_for_pointers(s, impl_->config(s), args);
  impl_->kernel(s, c).launch(args, stream);
}

void OpsRuntime::prepare(const std::vector<RowOpSpec>& specs) {
  for (const RowOpSpec& s : specs) {
    GF_CHECK(s.invalid_reason().empty(), "invalid op {}: {}", s.key(), s.invalid_reason());
    impl_->kernel(s, impl_->config(s));
  }
}

}  // namespace gf

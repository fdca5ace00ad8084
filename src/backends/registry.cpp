#include "backends/registry.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>

#include "gemmforge/error.hpp"

namespace gf {

std::string_view to_string(Search s) {
  switch (s) {
    case Search::fast:
      return "fast";
    case Search::normal:
      return "default";
    case Search::exhaustive:
      return "exhaustive";
  }
  return "?";
}

Search parse_search(std::string_view s) {
  if (s == "fast") return Search::fast;
  if (s == "default" || s == "normal") return Search::normal;
  if (s == "exhaustive") return Search::exhaustive;
  GF_FAIL("unknown search level '{}' (fast, default, exhaustive)", s);
}

const std::vector<std::shared_ptr<Backend>>& all_backends() {
  static const std::vector<std::shared_ptr<Backend>> backends = [] {
    std::vector<std::shared_ptr<Backend>> v = {cublaslt::make_backend(), native::make_backend(),
                                               triton_backend::make_backend(), unfused::make_backend()};
    const char* plant = std::getenv("GEMMFORGE_PLANT_FAULTS");
    if (plant && std::strcmp(plant, "1") == 0) v.push_back(faulty::make_backend());
    return v;
  }();
  return backends;
}

std::shared_ptr<Backend> find_backend(const std::string& name) {
  for (const auto& b : all_backends())
    if (b->name() == name) return b;
  return nullptr;
}

std::string backend_versions() {
  std::vector<std::string> parts;
  for (const auto& b : all_backends()) parts.push_back(b->name() + "=" + b->version());
  return fmt::format("{}", fmt::join(parts, ","));
}

std::string tuning_fingerprint(const DeviceInfo& device) { return device.fingerprint() + "|" + backend_versions(); }

}  // namespace gf

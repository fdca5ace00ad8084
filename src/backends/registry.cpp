#include "backends/registry.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <set>

#include "gemmforge/error.hpp"

namespace gf {
namespace {

bool plant_faults() {
  const char* plant = std::getenv("GEMMFORGE_PLANT_FAULTS");
  return plant && std::strcmp(plant, "1") == 0;
}

}  // namespace

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

template <>
const std::vector<std::shared_ptr<Backend>>& backends<GemmProblem>() {
  static const std::vector<std::shared_ptr<Backend>> list = [] {
    std::vector<std::shared_ptr<Backend>> v = {cublaslt::make_backend(),        native::make_backend(),
                                               cutlass_backend::make_backend(), triton_backend::make_backend(),
                                               cute_backend::make_backend(),    unfused::make_backend()};
    if (plant_faults()) v.push_back(faulty::make_gemm_backend());
    return v;
  }();
  return list;
}

template <>
const std::vector<std::shared_ptr<RowOpBackend>>& backends<RowOpSpec>() {
  static const std::vector<std::shared_ptr<RowOpBackend>> list = [] {
    std::vector<std::shared_ptr<RowOpBackend>> v = {rowops::make_backend(), triton_rowops::make_backend(),
                                                    cute_rowops::make_backend()};
    if (plant_faults()) v.push_back(faulty::make_rowop_backend());
    return v;
  }();
  return list;
}

template <class Problem>
std::shared_ptr<BackendOf<Problem>> find_backend(std::string_view name) {
  for (const auto& b : backends<Problem>())
    if (b->name() == name) return b;
  return nullptr;
}
template std::shared_ptr<Backend> find_backend<GemmProblem>(std::string_view);
template std::shared_ptr<RowOpBackend> find_backend<RowOpSpec>(std::string_view);

std::string backend_names() {
  std::set<std::string> names;
  for (const auto& b : backends<GemmProblem>()) names.insert(b->name());
  for (const auto& b : backends<RowOpSpec>()) names.insert(b->name());
  return fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace gf

#pragma once
// Loading a compiled unit (dlopen, once per shared object and process) and launching one of its
// instances. Needs the GPU to launch; loading and can_implement need none.
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backends/gemm/cutlass/space.hpp"

namespace gf::cutlass_backend {

// The instance c names in the unit at `library`, for problem p. Throws gf::Error when the unit
// cannot be loaded, lacks the instance, or CUTLASS's can_implement refuses p (its reason).
std::unique_ptr<Kernel> load_kernel(const CutlassConfig& c, const GemmProblem& p, const std::filesystem::path& library);

// "" when CUTLASS's can_implement accepts p for the instance c names in the unit at `library`,
// else its refusal. Needs no GPU.
std::string refusal(const CutlassConfig& c, const GemmProblem& p, const std::filesystem::path& library);

// Every instance name the unit at `library` exports, in order (tests, messages).
std::vector<std::string> unit_instances(const std::filesystem::path& library);

}  // namespace gf::cutlass_backend

#include "jit/triton.hpp"

#include <fmt/format.h>

#include "core/hash.hpp"
#include "gemmforge/error.hpp"

namespace gf::jit::triton {

const Env& env() {
  static const Env e = [] {
    Env out;
    if (const PythonSources& sources = python_sources(); !sources.error.empty()) {
      out.error = sources.error;
      return out;
    }
    std::string why;
    out.version = python_package_version("triton", &why);
    if (out.version.empty()) out.error = "python3 with triton is not available (" + why + "); pip install triton";
    return out;
  }();
  return e;
}

std::string sources_hash(std::initializer_list<std::string_view> files) {
  const PythonSources& s = python_sources();
  return hex64(fnv1a(s.hash_of(files), fnv1a(s.hash_of({"worker_loop.py", "gemmforge_triton/worker.py"}))));
}

PythonArtifact compile(const nlohmann::json& request, const std::string& key, const std::string& listed_version,
                       bool use_cache) {
  static PythonPool pool("gemmforge_triton/worker.py");
  std::string why_not = env().error;
  if (why_not.empty() && env().version != listed_version)
    why_not = fmt::format("Triton is {} here but the candidate was listed under Triton {}: tune again", env().version,
                          listed_version);
  return compile_through_cache(pool, request, key, use_cache, why_not);
}

LoadedKernel::LoadedKernel(const PythonArtifact& compiled, const std::vector<std::string>& abi_args,
                           const std::string& version, const std::string& what)
    : meta_(compiled.meta), module_(compiled.bytes) {
  GF_CHECK(meta_.value("triton_version", "") == version, "cubin for {} was compiled by Triton {}, expected {}", what,
           meta_.value("triton_version", ""), version);
  std::vector<std::string> args = abi_args;
  args.insert(args.end(), {"global_scratch", "profile_scratch"});
  GF_CHECK(meta_.value("args", nlohmann::json::array()) == nlohmann::json(args),
           "Triton {} kernel ABI {} differs from the launcher's {}", version,
           meta_.value("args", nlohmann::json()).dump(), nlohmann::json(args).dump());
  GF_CHECK(!meta_.value("launch_cooperative_grid", false) && !meta_.value("launch_pdl", false),
           "Triton kernel {} wants cooperative or PDL launch, which the launcher does not do", what);
  fn_ = module_.function(meta_.at("name").get<std::string>().c_str());
  threads_ = unsigned(32 * meta_.at("num_warps").get<int>());
  shared_ = meta_.at("shared").get<unsigned>();
  if (shared_ > 48 * 1024) cuda::set_max_dynamic_smem(fn_, shared_);
  num_ctas_ = meta_.value("num_ctas", 1);
}

size_t LoadedKernel::global_scratch_bytes(size_t programs) const {
  return (size_t(meta_.value("global_scratch_size", int64_t(0))) * programs * size_t(num_ctas_) + 255) / 256 * 256;
}

size_t LoadedKernel::profile_scratch_bytes(size_t programs) const {
  return size_t(meta_.value("profile_scratch_size", int64_t(0))) * programs * size_t(num_ctas_);
}

void LoadedKernel::launch(unsigned programs, std::vector<void*> args, void* workspace, CUstream stream) const {
  const size_t global = global_scratch_bytes(programs);
  void* gs = global ? workspace : nullptr;
  void* ps = profile_scratch_bytes(programs) ? static_cast<char*>(workspace) + global : nullptr;
  args.push_back(&gs);
  args.push_back(&ps);
  cuda::launch(fn_,
               {.grid = {programs * unsigned(num_ctas_), 1, 1},
                .block = {threads_, 1, 1},
                .smem_bytes = shared_,
                .cluster = {unsigned(num_ctas_), 1, 1}},
               args.data(), stream);
}

}  // namespace gf::jit::triton

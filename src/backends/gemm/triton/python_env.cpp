#include "backends/gemm/triton/python_env.hpp"

#include "jit/python_pool.hpp"
#include "store/kernel_cache.hpp"

namespace gf::triton_backend {
namespace {

PythonEnv probe() {
  PythonEnv env;
  const jit::PythonSources& sources = jit::python_sources();
  env.sources_hash = sources.hash;
  if (!sources.error.empty()) {
    env.error = sources.error;
    return env;
  }
  env.worker_script = (sources.dir / "gemmforge_triton" / "worker.py").string();
  std::string why;
  env.triton_version = jit::python_package_version("triton", &why);
  if (env.triton_version.empty()) env.error = "python3 with triton is not available (" + why + "); pip install triton";
  return env;
}

}  // namespace

const PythonEnv& python_env() {
  static const PythonEnv env = probe();
  return env;
}

jit::PythonPool::FileReply compile_in_pool(const nlohmann::json& request, const std::string& name, double timeout_s) {
  static jit::PythonPool pool("gemmforge_triton/worker.py");
  return pool.call_writing(request, KernelCache::shared().dir(), name, timeout_s);
}

}  // namespace gf::triton_backend

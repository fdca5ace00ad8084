#include "backends/gemm/triton/python_env.hpp"

#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>

#include "core/embedded.hpp"
#include "core/files.hpp"
#include "core/hash.hpp"
#include "gemmforge/paths.hpp"
#include "process/worker_process.hpp"

namespace gf::triton_backend {
namespace {

std::vector<std::string> worker_argv(const std::string& script) {
  const char* py = std::getenv("GEMMFORGE_PYTHON");
  // env finds python3 on PATH; -u keeps the replies unbuffered.
  return {"/usr/bin/env", py && *py ? py : "python3", "-u", script};
}

PythonEnv probe() {
  PythonEnv env;
  uint64_t h = 0;
  for (const auto& [path, text] : embedded::files())
    if (path.starts_with("python/")) h = fnv1a(text, fnv1a(path, h));
  env.sources_hash = hex64(h);
  try {
    auto dir = home_dir() / "python" / env.sources_hash.substr(0, 12);
    for (const auto& [path, text] : embedded::files()) {
      if (!path.starts_with("python/")) continue;
      auto target = dir / path.substr(7);
      if (std::filesystem::exists(target)) continue;
      std::filesystem::create_directories(target.parent_path());
      write_file_atomically(target, std::string(text));
    }
    env.worker_script = (dir / "gemmforge_triton" / "worker.py").string();
  } catch (const std::exception& e) {
    env.error = std::string("cannot write the Triton worker: ") + e.what();
    return env;
  }
  // Asking the package metadata is much faster than importing triton. A worker of one request.
  constexpr const char* kProbe = R"(import importlib.metadata as md, json, os
request_fd, reply_fd = (int(f) for f in os.environ["GEMMFORGE_WORKER_FDS"].split(","))
req = json.loads(os.fdopen(request_fd).readline())
try:
    out = {"ok": True, "triton_version": md.version("triton")}
except Exception:
    out = {"ok": False, "error": "triton is not installed"}
out["id"] = req["id"]
os.fdopen(reply_fd, "w").write(json.dumps(out) + "\n")
)";
  const char* py = std::getenv("GEMMFORGE_PYTHON");
  WorkerProcess w({"/usr/bin/env", py && *py ? py : "python3", "-c", kProbe});
  auto reply = w.call({{"op", "version"}}, 60.0);
  if (!reply.value("ok", false)) {
    env.error = "python3 with triton is not available (" + reply.value("error", std::string("no python3")) +
                "); pip install triton";
    return env;
  }
  env.triton_version = reply.value("triton_version", "");
  return env;
}

class Pool {
 public:
  nlohmann::json call(const nlohmann::json& req, double timeout_s) {
    std::unique_ptr<WorkerProcess> w = take();
    auto reply = w->call(req, timeout_s);
    give_back(std::move(w));
    return reply;
  }

 private:
  std::unique_ptr<WorkerProcess> take() {
    std::unique_lock lock(mu_);
    const size_t limit = std::max(1u, std::thread::hardware_concurrency());
    cv_.wait(lock, [&] { return !idle_.empty() || started_ < limit; });
    if (!idle_.empty()) {
      auto w = std::move(idle_.back());
      idle_.pop_back();
      return w;
    }
    ++started_;
    return std::make_unique<WorkerProcess>(worker_argv(python_env().worker_script));
  }
  void give_back(std::unique_ptr<WorkerProcess> w) {
    std::lock_guard lock(mu_);
    idle_.push_back(std::move(w));  // a dead worker restarts on its next call
    cv_.notify_one();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<WorkerProcess>> idle_;
  size_t started_ = 0;
};

}  // namespace

const PythonEnv& python_env() {
  static const PythonEnv env = probe();
  return env;
}

nlohmann::json compile_in_pool(const nlohmann::json& request, double timeout_s) {
  static Pool pool;
  return pool.call(request, timeout_s);
}

}  // namespace gf::triton_backend

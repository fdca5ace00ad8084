#include "jit/python_pool.hpp"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "core/embedded.hpp"
#include "core/files.hpp"
#include "core/hash.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/paths.hpp"
#include "process/worker_process.hpp"
#include "store/kernel_cache.hpp"

namespace gf::jit {

std::string python() {
  const char* py = std::getenv("GEMMFORGE_PYTHON");
  return py && *py ? py : "python3";
}

namespace {

PythonSources write_sources() {
  PythonSources s;
  uint64_t h = 0;
  for (const auto& [path, text] : embedded::files())
    if (path.starts_with("python/")) h = fnv1a(text, fnv1a(path, h));
  s.hash = hex64(h);
  try {
    s.dir = home_dir() / "python" / s.hash.substr(0, 12);
    for (const auto& [path, text] : embedded::files()) {
      if (!path.starts_with("python/")) continue;
      auto target = s.dir / path.substr(7);
      if (std::filesystem::exists(target)) continue;
      std::filesystem::create_directories(target.parent_path());
      write_file_atomically(target, std::string(text));
    }
  } catch (const std::exception& e) {
    s.error = std::string("cannot write gemmforge's Python workers: ") + e.what();
  }
  return s;
}

// What a worker's ptxas said of the kernel (the CuTe DSL workers report it), into the report:
// registers, spill bytes, and its performance notes as the log.
void report_ptxas(PythonArtifact& out) {
  if (!out.meta.is_object()) return;
  out.report.registers = out.meta.value("registers", -1);
  out.report.spill_bytes = out.meta.value("spill_bytes", -1);
  for (const auto& note : out.meta.value("ptxas_notes", nlohmann::json::array()))
    if (note.is_string()) out.report.log += "ptxas: " + note.get<std::string>() + "\n";
}

}  // namespace

std::string PythonSources::hash_of(std::initializer_list<std::string_view> files) const {
  uint64_t h = 0;
  for (std::string_view file : files) {
    const std::string path = "python/" + std::string(file);
    auto it = embedded::files().find(path);
    GF_CHECK(it != embedded::files().end(), "{} is not among the embedded Python files", path);
    h = fnv1a(it->second, fnv1a(path, h));
  }
  return hex64(h);
}

const PythonSources& python_sources() {
  static const PythonSources sources = write_sources();
  return sources;
}

std::vector<std::string> python_package_versions(const std::vector<std::string>& distributions, std::string* error) {
  // A worker of one request.
  constexpr const char* kProbe = R"(import importlib.metadata as md, json, os, sys
request_fd, reply_fd = (int(f) for f in os.environ["GEMMFORGE_WORKER_FDS"].split(","))
req = json.loads(os.fdopen(request_fd).readline())
def version(distribution):
    try:
        return md.version(distribution)
    except Exception:
        return ""
out = {"ok": True, "versions": [version(d) for d in req["distributions"]], "id": req["id"]}
os.fdopen(reply_fd, "w").write(json.dumps(out) + "\n")
)";
  try {
    WorkerProcess w({"/usr/bin/env", python(), "-c", kProbe});
    auto reply = w.call({{"op", "version"}, {"distributions", distributions}}, 60.0);
    if (reply.value("ok", false)) return reply.at("versions").get<std::vector<std::string>>();
    *error = reply.value("crashed", false) ? python() + " did not run (" + reply.value("error", std::string("?")) + ")"
                                           : reply.value("error", std::string("no python3"));
  } catch (const std::exception& e) {
    *error = e.what();
  }
  return std::vector<std::string>(distributions.size());
}

std::string python_package_version(const std::string& distribution, std::string* error) {
  std::string v = python_package_versions({distribution}, error)[0];
  if (v.empty() && error->empty()) *error = distribution + " is not installed for " + python();
  return v;
}

struct PythonPool::State {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::unique_ptr<WorkerProcess>> idle;
  size_t started = 0;
};

PythonPool::PythonPool(std::string script) : script_(std::move(script)), state_(std::make_unique<State>()) {}
PythonPool::~PythonPool() = default;

nlohmann::json PythonPool::call(const nlohmann::json& request, double timeout_s) {
  State& s = *state_;
  std::unique_ptr<WorkerProcess> w;
  {
    std::unique_lock lock(s.mu);
    const size_t limit = std::max(1u, std::thread::hardware_concurrency());
    s.cv.wait(lock, [&] { return !s.idle.empty() || s.started < limit; });
    if (!s.idle.empty()) {
      w = std::move(s.idle.back());
      s.idle.pop_back();
    } else {
      ++s.started;
    }
  }
  if (!w) {
    // -u keeps the replies unbuffered.
    w = std::make_unique<WorkerProcess>(
        std::vector<std::string>{"/usr/bin/env", python(), "-u", (python_sources().dir / script_).string()});
  }
  auto reply = w->call(request, timeout_s);
  std::lock_guard lock(s.mu);
  s.idle.push_back(std::move(w));  // a dead worker restarts on its next call
  s.cv.notify_one();
  return reply;
}

PythonPool::FileReply PythonPool::call_writing(nlohmann::json request, const std::filesystem::path& dir,
                                               const std::string& name, double timeout_s) {
  static std::atomic<uint64_t> calls{0};
  struct TempFile {
    std::filesystem::path path;
    ~TempFile() {
      std::error_code ec;
      std::filesystem::remove(path, ec);
    }
  } tmp{dir / ("." + name + "." + std::to_string(getpid()) + "." + std::to_string(calls++))};
  request["path"] = tmp.path.string();
  FileReply out{call(request, timeout_s), {}};
  if (out.reply.value("ok", false)) {
    std::ifstream in(tmp.path, std::ios::binary);
    out.bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  return out;
}

PythonArtifact compile_through_cache(PythonPool& pool, const nlohmann::json& request, const std::string& key,
                                     bool use_cache, const std::string& why_not, double timeout_s) {
  PythonArtifact out;
  const auto start = std::chrono::steady_clock::now();
  if (use_cache) {
    if (auto hit = KernelCache::shared().get(key)) {
      out.bytes = std::move(hit->bytes);
      out.meta = nlohmann::json::parse(hit->meta, nullptr, false);
      out.report.cached = true;
      report_ptxas(out);
      out.report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return out;
    }
  }
  if (!why_not.empty()) {
    out.report.ok = false;
    out.report.log = why_not;
    return out;
  }
  auto [reply, bytes] = pool.call_writing(request, KernelCache::shared().dir(), key + ".out", timeout_s);
  out.report.seconds = reply.value("seconds", 0.0);
  if (!reply.value("ok", false)) {
    out.report.ok = false;
    out.report.log = reply.value("error", std::string("no reply")) + "\n" + reply.value("trace", std::string());
    return out;
  }
  if (bytes.empty()) {
    out.report.ok = false;
    out.report.log = "the worker replied ok but wrote nothing";
    return out;
  }
  out.bytes = std::move(bytes);
  out.meta = std::move(reply);
  KernelCache::shared().put(key, out.bytes, out.meta.dump());
  report_ptxas(out);
  return out;
}

}  // namespace gf::jit

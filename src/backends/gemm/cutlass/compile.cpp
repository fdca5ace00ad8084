#include "backends/gemm/cutlass/compile.hpp"

#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "backends/gemm/cutlass/codegen.hpp"
#include "core/embedded.hpp"
#include "core/files.hpp"
#include "core/hash.hpp"
#include "core/log.hpp"
#include "core/strings.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/paths.hpp"
#include "process/worker_process.hpp"
#include "store/kernel_cache.hpp"

namespace gf::cutlass_backend {
namespace {

namespace fs = std::filesystem;

// The unit template's headers, included by generated units as "gemm/cutlass/...".
constexpr std::string_view kTemplatePrefix = "kernels/gemm/cutlass/";

// A unit of 8 instances takes ~80 CPU-seconds on a fast core and several minutes on a loaded one.
constexpr double kDefaultTimeoutSeconds = 1800;

// stdout of a short probe command (a shell line), or "" when it fails.
std::string probe_output(const std::string& command) {
  std::string out;
  if (FILE* f = popen((command + " 2>/dev/null").c_str(), "r")) {
    std::array<char, 4096> buf;
    while (size_t n = fread(buf.data(), 1, buf.size(), f)) out.append(buf.data(), n);
    if (pclose(f) != 0) out.clear();
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  return out;
}

// s as one word of a POSIX shell line.
std::string shell_word(std::string_view s) {
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// "4.2.0" from cutlass/version.h, or "".
std::string header_version(const fs::path& include) {
  std::ifstream in(include / "cutlass" / "version.h");
  std::string line, major, minor, patch;
  while (std::getline(in, line)) {
    for (auto [macro, into] : {std::pair{"#define CUTLASS_MAJOR ", &major}, std::pair{"#define CUTLASS_MINOR ", &minor},
                               std::pair{"#define CUTLASS_PATCH ", &patch}})
      if (line.starts_with(macro)) {
        *into = line.substr(std::string_view(macro).size());
        into->erase(into->find_last_not_of(" \t\r") + 1);
      }
  }
  return major.empty() ? "" : major + "." + minor + "." + patch;
}

Toolchain probe() {
  Toolchain t;
  t.nvcc = env("GEMMFORGE_NVCC");
  if (t.nvcc.empty()) t.nvcc = probe_output("command -v nvcc");
  if (t.nvcc.empty() && fs::exists("/usr/local/cuda/bin/nvcc")) t.nvcc = "/usr/local/cuda/bin/nvcc";
  if (t.nvcc.empty()) {
    t.nvcc_error = "nvcc not found (put the CUDA toolkit's bin/ on PATH or set GEMMFORGE_NVCC)";
  } else {
    const std::string version = probe_output(shell_word(t.nvcc) + " --version");
    const size_t line = version.rfind('\n');
    t.nvcc_version = line == std::string::npos ? version : version.substr(line + 1);
    if (t.nvcc_version.empty()) t.nvcc_error = fmt::format("{} --version failed", t.nvcc);
  }
  t.include_dir = env("GEMMFORGE_CUTLASS_INCLUDE");
  if (t.include_dir.empty()) {
    // The package's location without importing it (its import builds the generator's tables).
    const char* py = std::getenv("GEMMFORGE_PYTHON");
    t.include_dir = probe_output(shell_word(py && *py ? py : "python3") +
                                 " -c \"import importlib.util, os; s = importlib.util.find_spec('cutlass_library'); "
                                 "print(os.path.join(s.submodule_search_locations[0], 'source', 'include'))\"");
  }
  const std::string found = t.include_dir.empty() ? "" : header_version(t.include_dir);
  if (found.empty())
    t.headers_error = fmt::format(
        "the CUTLASS headers were not found{} (pip install nvidia-cutlass=={}.0, or set GEMMFORGE_CUTLASS_INCLUDE)",
        t.include_dir.empty() ? "" : " in " + t.include_dir, kCutlassVersion);
  else if (found != kCutlassVersion)
    t.headers_error = fmt::format("the CUTLASS headers in {} are version {}, not {} (pip install nvidia-cutlass=={}.0)",
                                  t.include_dir, found, kCutlassVersion, kCutlassVersion);
  // Host code at -O1: the front end's time is CUTLASS's templates, and the host side is a few
  // calls; the device code is sm_90a (wgmma, setmaxnreg) at -O3.
  t.flags = {"-shared",      "-Xcompiler", "-fPIC",      "--cudart",           "shared",
             "-arch=sm_90a", "-std=c++17", "-O3",        "-DNDEBUG",           "--expt-relaxed-constexpr",
             "-Xcompiler",   "-O1",        "-Xcompiler", "-fvisibility=hidden"};
  return t;
}

// The folder of nvcc's own runtime libraries, so that the unit finds libcudart.so.13 wherever it
// is loaded.
std::string runtime_dir(const std::string& nvcc) {
  return (fs::path(nvcc).parent_path().parent_path() / "lib64").string();
}

// Runs argv in a worker process (killed with everything it started after timeout_s), its output
// to log. Returns its exit status, or -1 with why in log when it did not finish.
int run_logged(const std::vector<std::string>& argv, const fs::path& log, double timeout_s, std::string& why) {
  // A one-request worker: sh answers the protocol (the request's id, the command's status) and
  // runs the command in between.
  static const std::string kShim =
      "IFS= read -r request <&3; id=${request#*\\\"id\\\":}; id=${id%%[,\\}]*}; log=$1; shift; "
      "\"$@\" >\"$log\" 2>&1; rc=$?; printf '{\"id\":%s,\"ok\":true,\"rc\":%d}\\n' \"$id\" \"$rc\" >&4";
  std::vector<std::string> full = {"/bin/sh", "-c", kShim, "gemmforge-nvcc", log.string()};
  full.insert(full.end(), argv.begin(), argv.end());
  WorkerProcess w(full);
  const nlohmann::json reply = w.call({{"op", "run"}}, timeout_s);
  if (!reply.value("ok", false)) {
    why = reply.value("error", std::string("the compile worker gave no reply"));
    return -1;
  }
  return reply.value("rc", -1);
}

// At most one nvcc a core: a unit's front end is single-threaded and takes gigabytes.
class Slots {
 public:
  void acquire() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return used_ < limit_; });
    ++used_;
  }
  void release() {
    std::lock_guard lock(mu_);
    --used_;
    cv_.notify_one();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  unsigned used_ = 0, limit_ = std::max(1u, std::thread::hardware_concurrency());
};

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// The shared object of a cache entry as a file dlopen can map: written once per key.
fs::path loadable(const std::string& key, const std::string& bytes) {
  const fs::path path = home_dir() / "cutlass" / (key + ".so");
  std::error_code ec;
  if (fs::file_size(path, ec) != bytes.size() || ec || slurp(path) != bytes) {
    fs::create_directories(path.parent_path());
    write_file_atomically(path, bytes);
  }
  return path;
}

CompiledUnit compile_fresh(const Unit& u, const std::string& key) {
  const Toolchain& t = toolchain();
  CompiledUnit out;
  GF_CHECK(t.nvcc_error.empty(), "{}", t.nvcc_error);
  GF_CHECK(t.headers_error.empty(), "{}", t.headers_error);
  static std::atomic<uint64_t> calls{0};
  const fs::path dir = home_dir() / "cutlass" / "build" / fmt::format("{}.{}.{}", key, getpid(), calls++);
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};
  for (const auto& [path, text] : embedded::files())
    if (path.starts_with(kTemplatePrefix)) {
      const fs::path target = dir / "include" / path.substr(std::string_view("kernels/").size());
      fs::create_directories(target.parent_path());
      write_file_atomically(target, std::string(text));
    }
  const std::string source = unit_source(u);
  write_file_atomically(dir / "unit.cu", source);
  std::vector<std::string> argv = {t.nvcc};
  argv.insert(argv.end(), t.flags.begin(), t.flags.end());
  argv.insert(argv.end(),
              {"-I" + (dir / "include").string(), "-I" + t.include_dir, "-Xlinker", "-rpath," + runtime_dir(t.nvcc),
               "-o", (dir / "unit.so").string(), (dir / "unit.cu").string()});
  const std::string dump = env("GEMMFORGE_DUMP");
  if (!dump.empty()) {
    fs::create_directories(dump);
    std::ofstream(fs::path(dump) / (u.name() + ".cu")) << source;
    std::string cmd;
    for (const auto& a : argv) cmd += shell_word(a) + " ";
    std::ofstream(fs::path(dump) / (u.name() + ".cmd")) << cmd << "\n";
  }
  const double timeout = parse_float(env("GEMMFORGE_CUTLASS_TIMEOUT")).value_or(float(kDefaultTimeoutSeconds));
  static Slots slots;
  slots.acquire();
  const auto start = std::chrono::steady_clock::now();
  std::string why;
  const int rc = run_logged(argv, dir / "nvcc.log", timeout, why);
  out.report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  slots.release();
  out.report.log = slurp(dir / "nvcc.log");
  if (!dump.empty()) std::ofstream(fs::path(dump) / (u.name() + ".log")) << out.report.log;
  if (rc != 0) {
    out.report.ok = false;
    out.report.log =
        fmt::format("nvcc {} for {}\n{}", rc < 0 ? "did not finish (" + why + ")" : fmt::format("exited with {}", rc),
                    u.name(), out.report.log);
    return out;
  }
  const std::string bytes = slurp(dir / "unit.so");
  GF_CHECK(!bytes.empty(), "nvcc wrote no shared object for {}", u.name());
  KernelCache::shared().put(key, bytes, nlohmann::json{{"unit", u.name()}, {"seconds", out.report.seconds}}.dump());
  out.library = loadable(key, bytes);
  log().debug("cutlass: compiled {} in {:.1f} s", u.name(), out.report.seconds);
  return out;
}

}  // namespace

const Toolchain& toolchain() {
  static const Toolchain t = probe();
  return t;
}

uint64_t toolchain_hash() {
  static const uint64_t h = [] {
    const Toolchain& t = toolchain();
    uint64_t acc = fnv1a(t.nvcc_version);
    acc = fnv1a(kCutlassVersion, acc);
    for (const auto& f : t.flags) acc = fnv1a(f + "|", acc);
    for (const auto& [path, text] : embedded::files())
      if (path.starts_with(kTemplatePrefix)) acc = fnv1a(text, fnv1a(path, acc));
    return acc;
  }();
  return h;
}

std::string cache_key(const Unit& u) { return u.name() + "-" + hex64(fnv1a(unit_source(u), toolchain_hash())); }

CompiledUnit compile_unit(const Unit& u, bool use_cache) {
  const auto start = std::chrono::steady_clock::now();
  const std::string key = cache_key(u);
  auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  // Units this process compiled fresh: without the cache (--no-cache) the other candidates of a
  // unit still take its one nvcc run, not one each.
  static std::mutex fresh_mu;
  static std::set<std::string> fresh;
  const bool compiled_here = [&] {
    std::lock_guard lock(fresh_mu);
    return fresh.count(key) > 0;
  }();
  if (use_cache || compiled_here) {
    if (auto hit = KernelCache::shared().get(key)) {
      CompiledUnit out;
      out.library = loadable(key, hit->bytes);
      out.report.cached = true;
      out.report.seconds = seconds();
      return out;
    }
  }
  // One nvcc run a unit at a time in this process: the candidates of a unit are compiled by
  // parallel threads, and the first one's run serves the others.
  static std::mutex mu;
  static std::map<std::string, std::shared_future<CompiledUnit>> running;
  std::promise<CompiledUnit> promise;
  std::shared_future<CompiledUnit> shared;
  bool owner = false;
  {
    std::lock_guard lock(mu);
    auto it = running.find(key);
    if (it == running.end()) {
      shared = promise.get_future().share();
      running.emplace(key, shared);
      owner = true;
    } else {
      shared = it->second;
    }
  }
  if (!owner) {
    CompiledUnit out = shared.get();  // rethrows the owner's error
    out.report.cached = out.report.ok;
    out.report.seconds = seconds();
    return out;
  }
  try {
    CompiledUnit compiled = compile_fresh(u, key);
    if (compiled.report.ok) {
      std::lock_guard lock(fresh_mu);
      fresh.insert(key);
    }
    promise.set_value(std::move(compiled));
  } catch (...) {
    promise.set_exception(std::current_exception());
  }
  {
    std::lock_guard lock(mu);
    running.erase(key);
  }
  return shared.get();
}

}  // namespace gf::cutlass_backend

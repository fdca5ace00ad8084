#include "jit/compile.hpp"

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/embedded.hpp"
#include "core/hash.hpp"
#include "cuda/nvrtc.hpp"
#include "store/kernel_cache.hpp"

namespace gf::jit {
namespace {

cuda::CompileOptions options() {
  cuda::CompileOptions o;
  o.headers = kernel_headers();
  return o;
}

void dump(const std::string& name, const std::string& source, const cuda::CompileResult& r) {
  const char* dir = std::getenv("GEMMFORGE_DUMP");
  if (!dir || !*dir) return;
  std::filesystem::create_directories(dir);
  std::ofstream(std::filesystem::path(dir) / (name + ".cu")) << source;
  std::ofstream(std::filesystem::path(dir) / (name + ".log")) << r.log;
  std::ofstream(std::filesystem::path(dir) / (name + ".cubin"), std::ios::binary) << r.cubin;
}

}  // namespace

const std::vector<std::pair<std::string, std::string>>& kernel_headers() {
  static const auto headers = [] {
    std::vector<std::pair<std::string, std::string>> h;
    // Included as "ptx/tma.cuh" (kernels/) and "gemmforge/codes.hpp" (include/).
    for (const auto& [path, text] : embedded::files())
      for (std::string_view root : {"kernels/", "include/"})
        if (path.starts_with(root)) h.emplace_back(path.substr(root.size()), std::string(text));
    return h;
  }();
  return headers;
}

uint64_t toolchain_hash() {
  static const uint64_t h = [] {
    cuda::CompileOptions o = options();
    uint64_t acc = fnv1a(cuda::nvrtc_version() + "|" + o.arch);
    for (const auto& [name, text] : o.headers) acc = fnv1a(text, fnv1a(name, acc));
    return acc;
  }();
  return h;
}

Compiled compile(const std::string& name, const std::string& source, bool use_cache) {
  auto start = std::chrono::steady_clock::now();
  const std::string key = name + "-" + hex64(fnv1a(source, toolchain_hash()));
  Compiled out;
  if (use_cache) {
    if (auto hit = KernelCache::shared().get(key)) {
      auto meta = nlohmann::json::parse(hit->meta, nullptr, false);
      out.cubin = std::move(hit->bytes);
      out.report.cached = true;
      if (meta.is_object()) {
        out.report.registers = meta.value("registers", -1);
        out.report.spill_bytes = meta.value("spill_bytes", -1);
      }
      out.report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return out;
    }
  }
  cuda::CompileResult r = cuda::nvrtc_compile(source, name + ".cu", options());
  dump(name, source, r);
  out.report.ok = r.ok;
  out.report.seconds = r.seconds;
  out.report.registers = r.registers;
  out.report.spill_bytes = r.spill_bytes;
  out.report.log = r.log;
  if (!r.ok) return out;
  const char* fail_on_spill = std::getenv("GEMMFORGE_FAIL_ON_SPILL");
  if (fail_on_spill && std::string(fail_on_spill) == "1" && r.spill_bytes > 0) {
    out.report.ok = false;
    out.report.log = "register spills with GEMMFORGE_FAIL_ON_SPILL=1\n" + r.log;
    return out;
  }
  out.cubin = std::move(r.cubin);
  KernelCache::shared().put(key, out.cubin,
                            nlohmann::json{{"registers", r.registers}, {"spill_bytes", r.spill_bytes}}.dump());
  return out;
}

}  // namespace gf::jit

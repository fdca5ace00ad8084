#include "jit/compile.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string_view>

#include "core/embedded.hpp"
#include "core/hash.hpp"
#include "core/once.hpp"
#include "cuda/nvrtc.hpp"
#include "store/kernel_cache.hpp"

namespace gf::jit {
namespace {

cuda::CompileOptions options() {
  cuda::CompileOptions o;
  o.headers = kernel_headers();
  return o;
}

// GEMMFORGE_DUMP=DIR: the kernel's source, compiler log, PTX and cubin (for cuobjdump --dump-sass),
// and name.cmd, the command that compiles it again with nvcc from the headers in DIR/include.
void dump(const std::string& name, const std::string& source, const cuda::CompileResult& r) {
  const char* env = std::getenv("GEMMFORGE_DUMP");
  if (!env || !*env) return;
  namespace fs = std::filesystem;
  const fs::path dir(env);
  static Once headers_written;  // create_directories may throw: not std::call_once (core/once.hpp)
  headers_written.run([&] {
    for (const auto& [include, text] : kernel_headers()) {
      fs::create_directories((dir / "include" / include).parent_path());
      std::ofstream(dir / "include" / include) << text;
    }
  });
  std::ofstream(dir / (name + ".cu")) << source;
  std::ofstream(dir / (name + ".log")) << r.log;
  std::ofstream(dir / (name + ".ptx")) << r.ptx;
  std::ofstream(dir / (name + ".cubin"), std::ios::binary) << r.cubin;
  const cuda::CompileOptions o = options();
  std::string flags;
  for (const auto& f : o.flags()) flags += " " + f;
  std::ofstream(dir / (name + ".cmd")) << "# NVRTC " << cuda::nvrtc_version() << " compiled " << name
                                       << ".cu with:" << flags << "\n"
                                       << "# The same with nvcc, from this folder:\n"
                                       << "nvcc -cubin -arch=" << o.arch
                                       << " -std=c++17 -Xptxas -v --use_fast_math -Iinclude -o " << name
                                       << ".nvcc.cubin " << name << ".cu\n";
}

}  // namespace

std::string performance_notes(const std::string& log) {
  std::string notes;
  size_t begin = 0;
  while (begin < log.size()) {
    const size_t end = std::min(log.find('\n', begin), log.size());
    const std::string_view line(log.data() + begin, end - begin);
    if (line.find("(C75") != std::string_view::npos) notes.append(line).push_back('\n');
    begin = end + 1;
  }
  return notes;
}

const std::vector<std::pair<std::string, std::string>>& kernel_headers() {
  static const auto headers = [] {
    std::vector<std::pair<std::string, std::string>> h;
    // Included as "ptx/tma.cuh" (kernels/) and "gemmforge/codes.hpp" (include/). The CUTLASS
    // unit template is for nvcc alone (backends/gemm/cutlass/): not NVRTC's, nor in its hash.
    for (const auto& [path, text] : embedded::files())
      for (std::string_view root : {"kernels/", "include/"})
        if (path.starts_with(root) && !path.starts_with("kernels/gemm/cutlass/"))
          h.emplace_back(path.substr(root.size()), std::string(text));
    return h;
  }();
  return headers;
}

uint64_t toolchain_hash() {
  static const uint64_t h = [] {
    const cuda::CompileOptions o = options();
    uint64_t acc = fnv1a(cuda::nvrtc_version());
    for (const auto& flag : o.flags()) acc = fnv1a(flag + "|", acc);
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
        out.report.log = meta.value("ptxas_notes", "");
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
  KernelCache::shared().put(
      key, out.cubin,
      nlohmann::json{
          {"registers", r.registers}, {"spill_bytes", r.spill_bytes}, {"ptxas_notes", performance_notes(r.log)}}
          .dump());
  return out;
}

}  // namespace gf::jit

#include "cuda/nvrtc.hpp"

#include <fmt/format.h>
#include <nvrtc.h>

#include <chrono>
#include <regex>

namespace gf::cuda {
namespace {

int report_value(const std::string& log, const std::regex& re, int group_sum_count = 1) {
  std::smatch m;
  if (!std::regex_search(log, m, re)) return -1;
  int total = 0;
  for (int i = 1; i <= group_sum_count; ++i) total += std::stoi(m[i]);
  return total;
}

}  // namespace

std::vector<std::string> CompileOptions::flags() const {
  std::vector<std::string> f = {"--gpu-architecture=" + arch, "--std=c++17", "--ptxas-options=-v", "-default-device",
                                "--use_fast_math"};
  if (line_info) f.push_back("-lineinfo");
  f.insert(f.end(), extra.begin(), extra.end());
  return f;
}

CompileResult nvrtc_compile(const std::string& source, const std::string& name, const CompileOptions& options) {
  auto start = std::chrono::steady_clock::now();
  CompileResult r;
  nvrtcProgram prog = nullptr;
  std::vector<const char*> header_src, header_names;
  for (const auto& [include, text] : options.headers) {
    header_names.push_back(include.c_str());
    header_src.push_back(text.c_str());
  }
  if (nvrtcCreateProgram(&prog, source.c_str(), name.c_str(), int(header_src.size()), header_src.data(),
                         header_names.data()) != NVRTC_SUCCESS) {
    r.log = "nvrtcCreateProgram failed";
    return r;
  }
  const std::vector<std::string> opts = options.flags();
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  nvrtcResult status = nvrtcCompileProgram(prog, int(argv.size()), argv.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  r.log.resize(log_size);
  nvrtcGetProgramLog(prog, r.log.data());
  while (!r.log.empty() && (r.log.back() == '\0' || r.log.back() == '\n')) r.log.pop_back();
  if (status == NVRTC_SUCCESS) {
    size_t cubin_size = 0;
    nvrtcGetCUBINSize(prog, &cubin_size);
    r.cubin.resize(cubin_size);
    nvrtcGetCUBIN(prog, r.cubin.data());
    r.ok = cubin_size > 0;
    size_t ptx_size = 0;
    if (nvrtcGetPTXSize(prog, &ptx_size) == NVRTC_SUCCESS && ptx_size > 1) {
      r.ptx.resize(ptx_size);
      nvrtcGetPTX(prog, r.ptx.data());
      r.ptx.pop_back();  // the terminating NUL
    }
    static const std::regex regs(R"(Used (\d+) registers)");
    static const std::regex spills(R"((\d+) bytes spill stores, (\d+) bytes spill loads)");
    static const std::regex stack(R"((\d+) bytes stack frame)");
    r.registers = report_value(r.log, regs);
    r.spill_bytes = report_value(r.log, spills, 2);
    r.stack_bytes = report_value(r.log, stack);
  } else if (r.log.empty()) {
    r.log = nvrtcGetErrorString(status);
  }
  nvrtcDestroyProgram(&prog);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return fmt::format("{}.{}", major, minor);
}

}  // namespace gf::cuda

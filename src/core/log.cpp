#include "core/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>

namespace gf {

spdlog::logger& log() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_color_mt("gemmforge");
    l->set_pattern("%^[gemmforge %l]%$ %v");
    const char* level = std::getenv("GEMMFORGE_LOG");
    l->set_level(level ? spdlog::level::from_str(level) : spdlog::level::info);
    return l;
  }();
  return *logger;
}

}  // namespace gf

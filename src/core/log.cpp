#include "core/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <mutex>

namespace gf {
namespace {

spdlog::logger& backend() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = spdlog::stderr_color_mt("gemmforge");
    l->set_pattern("%^[gemmforge %l]%$ %v");
    const char* level = std::getenv("GEMMFORGE_LOG");
    l->set_level(level ? spdlog::level::from_str(level) : spdlog::level::info);
    return l;
  }();
  return *logger;
}

spdlog::level::level_enum to_spdlog(LogLevel level) {
  switch (level) {
    case LogLevel::debug: return spdlog::level::debug;
    case LogLevel::info: return spdlog::level::info;
    case LogLevel::warn: return spdlog::level::warn;
    case LogLevel::error: break;
  }
  return spdlog::level::err;
}

std::mutex tap_mutex;
std::function<void(std::string_view)> tap;

}  // namespace

bool Logger::enabled(LogLevel level) const { return backend().should_log(to_spdlog(level)); }

void Logger::write(LogLevel level, const std::string& line) {
  backend().log(to_spdlog(level), "{}", line);
  std::lock_guard lock(tap_mutex);
  if (tap) tap(fmt::format("[gemmforge {}] {}", spdlog::level::to_string_view(to_spdlog(level)), line));
}

void Logger::set_tap(std::function<void(std::string_view)> t) {
  std::lock_guard lock(tap_mutex);
  tap = std::move(t);
}

Logger& log() {
  static Logger logger;
  return logger;
}

}  // namespace gf

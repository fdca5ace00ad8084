#pragma once
// The library's logger writes to stderr (stdout carries tables, JSON and the worker protocol).
// GEMMFORGE_LOG=debug|info|warn|error sets its level; GEMMFORGE_LOG=debug also prints every
// candidate's time in each race and the config chosen for each problem. spdlog stays inside
// log.cpp: its header-only build costs every file that includes it seconds of compile time;
// callers format with fmt, which they have anyway.
#include <fmt/format.h>

#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace gf {

enum class LogLevel { debug, info, warn, error };

class Logger {
 public:
  bool enabled(LogLevel level) const;

  template <typename... Args>
  void debug(fmt::format_string<Args...> f, Args&&... args) { emit(LogLevel::debug, f, std::forward<Args>(args)...); }
  template <typename... Args>
  void info(fmt::format_string<Args...> f, Args&&... args) { emit(LogLevel::info, f, std::forward<Args>(args)...); }
  template <typename... Args>
  void warn(fmt::format_string<Args...> f, Args&&... args) { emit(LogLevel::warn, f, std::forward<Args>(args)...); }
  template <typename... Args>
  void error(fmt::format_string<Args...> f, Args&&... args) { emit(LogLevel::error, f, std::forward<Args>(args)...); }

  // While set, every line logged is also handed to `tap` as stderr shows it, "[gemmforge warning] ..."
  // (tests read what the library said); an empty function removes it.
  void set_tap(std::function<void(std::string_view)> tap);

 private:
  template <typename... Args>
  void emit(LogLevel level, fmt::format_string<Args...> f, Args&&... args) {
    if (enabled(level)) write(level, fmt::format(f, std::forward<Args>(args)...));
  }
  void write(LogLevel level, const std::string& line);
};

Logger& log();

}  // namespace gf

#pragma once
// One error type for the whole library. It carries the file and line that raised it, so that a
// message read in a log points at the code.
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace gf {

class Error : public std::runtime_error {
 public:
  Error(const std::string& message, const char* file, int line)
      : std::runtime_error(message), file_(file), line_(line) {}
  const char* file() const { return file_; }
  int line() const { return line_; }
  // "message (file.cpp:42)"
  std::string where() const;

 private:
  const char* file_;
  int line_;
};

}  // namespace gf

// Throws gf::Error with a formatted message when cond is false. Survives NDEBUG.
#define GF_CHECK(cond, ...)                                                         \
  do {                                                                              \
    if (!(cond)) throw ::gf::Error(::fmt::format(__VA_ARGS__), __FILE__, __LINE__); \
  } while (0)

#define GF_FAIL(...) throw ::gf::Error(::fmt::format(__VA_ARGS__), __FILE__, __LINE__)

#pragma once
// Names of the shared codes (gemmforge/codes.hpp) to text and back.
#include <cstddef>
#include <optional>
#include <string_view>

#include "gemmforge/codes.hpp"

namespace gf {

template <class Code, size_t N>
std::string_view code_name(const char* const (&names)[N], Code c) {
  const size_t i = size_t(c);
  return i < N ? names[i] : "?";
}

template <class Code, size_t N>
std::optional<Code> parse_code(const char* const (&names)[N], std::string_view text) {
  for (size_t i = 0; i < N; ++i)
    if (text == names[i]) return Code(i);
  return std::nullopt;
}

}  // namespace gf

#include "core/strings.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "gemmforge/error.hpp"

namespace gf {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t end = s.find(sep, start);
    parts.push_back(s.substr(start, end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

std::vector<std::string> split_list(std::string_view s, std::string_view what, bool strict) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  for (std::string_view part : split(s, ',')) {
    if (part.empty()) {
      GF_CHECK(!strict, "{} {} has an empty entry", what, quote(s));
      continue;
    }
    out.emplace_back(part);
  }
  return out;
}

std::optional<int64_t> parse_int(std::string_view s) {
  if (s.empty() || !(s[0] >= '0' && s[0] <= '9')) return std::nullopt;
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<float> parse_float(std::string_view s) {
  // Digits, one optional '.', an optional exponent: what strtof takes, less hex, inf and nan.
  size_t i = 0, digits = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  for (; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) ++digits;
  if (i < s.size() && s[i] == '.')
    for (++i; i < s.size() && s[i] >= '0' && s[i] <= '9'; ++i) ++digits;
  if (digits == 0) return std::nullopt;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    const size_t exp_start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == exp_start) return std::nullopt;
  }
  if (i != s.size()) return std::nullopt;
  const std::string text(s);
  const double wide = std::strtod(text.c_str(), nullptr);
  const float v = float(wide);
  if (!std::isfinite(v) || (wide != 0.0 && std::fabs(v) < 1.17549435e-38f)) return std::nullopt;
  return v;
}

namespace {

// The length of the valid UTF-8 sequence at s[i] that is not a C1 control (U+0080..U+009F), else 0.
size_t utf8_printable(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  const size_t n = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
  if (n == 0 || i + n > s.size() || c >= 0xf5) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xc0) != 0x80) return 0;
  if (c == 0xc2 && static_cast<unsigned char>(s[i + 1]) < 0xa0) return 0;
  return n;
}

}  // namespace

std::string quote(std::string_view s, size_t limit) {
  std::string out = "'";
  size_t i = 0;
  for (; i < s.size() && i < limit;) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += char(c);
      ++i;
    } else if (size_t n = c >= 0x80 ? utf8_printable(s, i) : 0) {
      out.append(s.substr(i, n));
      i += n;
    } else {
      out += c == '\n' ? "\\n" : c == '\t' ? "\\t" : fmt::format("\\x{:02x}", c);
      ++i;
    }
  }
  out += "'";
  if (i < s.size()) out += fmt::format(" (first {} of {} bytes)", i, s.size());
  return out;
}

}  // namespace gf

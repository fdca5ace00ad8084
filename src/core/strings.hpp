#pragma once
// Text helpers with one home: splitting lists, strict numbers, and quoting user input in errors.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gf {

// The parts of s between separators, empty ones included ("a,,b" -> a, "", b; "" -> one "").
std::vector<std::string_view> split(std::string_view s, char sep);
// The non-empty parts of a comma-separated list, as the command line gives them. Empty parts
// (",", "a,,b") are an error naming `what` when strict.
std::vector<std::string> split_list(std::string_view s, std::string_view what = "", bool strict = false);

// A decimal integer and nothing else: no sign, spaces or suffix.
std::optional<int64_t> parse_int(std::string_view s);
// A decimal floating-point number and nothing else ("1", "-0.5", "2.5e-3"; no spaces, hex,
// inf or nan), that float holds finitely and without rounding a non-zero value to zero.
std::optional<float> parse_float(std::string_view s);

// s for an error message: in single quotes, control characters escaped (\n, \x1b), at most
// `limit` characters of it with the length said past that. An error is then always one line.
std::string quote(std::string_view s, size_t limit = 80);

}  // namespace gf

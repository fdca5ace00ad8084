#pragma once
#include <optional>
#include <string_view>

#include "gemmforge/codes.hpp"

namespace gf {

constexpr int dtype_bytes(DType t) {
  switch (t) {
    case DType::f32:
      return 4;
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::e4m3:
    case DType::e5m2:
      return 1;
  }
  return 0;
}

constexpr bool is_fp8(DType t) { return t == DType::e4m3 || t == DType::e5m2; }

// Short names used in problem keys and on the command line: f32, f16, bf16, e4m3, e5m2.
std::string_view to_string(DType t);
// Accepts the short names and the common long ones (fp16, float16, bfloat16, fp32, float32).
std::optional<DType> parse_dtype(std::string_view s);

}  // namespace gf

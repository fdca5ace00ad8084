#include "gemmforge/dtype.hpp"

namespace gf {

std::string_view to_string(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::e4m3:
      return "e4m3";
    case DType::e5m2:
      return "e5m2";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "f32" || s == "fp32" || s == "float32" || s == "float") return DType::f32;
  if (s == "f16" || s == "fp16" || s == "float16" || s == "half") return DType::f16;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  if (s == "e4m3" || s == "fp8" || s == "float8_e4m3fn") return DType::e4m3;
  if (s == "e5m2" || s == "float8_e5m2") return DType::e5m2;
  return std::nullopt;
}

}  // namespace gf

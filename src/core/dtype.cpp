#include "gemmforge/dtype.hpp"

#include "core/codes.hpp"

namespace gf {

std::string_view to_string(DType t) { return code_name(kDTypeNames, t); }

std::optional<DType> parse_dtype(std::string_view s) {
  if (auto t = parse_code<DType>(kDTypeNames, s)) return t;
  if (s == "fp32" || s == "float32" || s == "float") return DType::f32;
  if (s == "fp16" || s == "float16" || s == "half") return DType::f16;
  if (s == "bfloat16") return DType::bf16;
  if (s == "fp8" || s == "float8_e4m3fn") return DType::e4m3;
  if (s == "float8_e5m2") return DType::e5m2;
  return std::nullopt;
}

}  // namespace gf

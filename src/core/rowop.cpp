#include "gemmforge/rowop.hpp"

#include <fmt/format.h>

#include "gemmforge/error.hpp"

namespace gf {
namespace {

const char* kind_name(RowOpKind k) {
  switch (k) {
    case RowOpKind::softmax:
      return "softmax";
    case RowOpKind::rmsnorm:
      return "rmsnorm";
    case RowOpKind::layernorm:
      return "layernorm";
  }
  return "?";
}

std::string kind_token(const RowOpSpec& s) {
  std::string k = kind_name(s.kind);
  if (s.residual) k += "+residual";
  if (s.valid_len) k += "+valid";
  return k;
}

}  // namespace


std::string RowOpSpec::key() const {
  std::string s = fmt::format("{}:{}x{}:{}", kind_token(*this), rows, cols, to_string(in));
  if (out != in) s += fmt::format("->{}", to_string(out));
  return s;
}

RowOpSpec RowOpSpec::parse(std::string_view text) {
  RowOpSpec s;
  auto fail = [&](const std::string& why) {
    GF_FAIL("bad op '{}': {} (expected OP[+residual|+valid]:ROWSxCOLS[:dtype[->out]])", text, why);
  };
  size_t c1 = text.find(':');
  if (c1 == std::string_view::npos) fail("no sizes");
  std::string_view kind = text.substr(0, c1), rest = text.substr(c1 + 1);
  std::string_view base = kind.substr(0, kind.find('+'));
  if (base == "softmax")
    s.kind = RowOpKind::softmax;
  else if (base == "rmsnorm")
    s.kind = RowOpKind::rmsnorm;
  else if (base == "layernorm")
    s.kind = RowOpKind::layernorm;
  else
    fail(fmt::format("unknown op '{}' (softmax, rmsnorm, layernorm)", base));
  for (size_t pos = kind.find('+'); pos != std::string_view::npos; pos = kind.find('+', pos + 1)) {
    std::string_view flag = kind.substr(pos + 1, kind.find('+', pos + 1) - pos - 1);
    if (flag == "residual")
      s.residual = true;
    else if (flag == "valid")
      s.valid_len = true;
    else
      fail(fmt::format("unknown flag '{}'", flag));
  }
  size_t c2 = rest.find(':');
  std::string dims(rest.substr(0, c2));
  size_t x = dims.find('x');
  if (x == std::string::npos) fail("sizes are ROWSxCOLS");
  char* end = nullptr;
  s.rows = std::strtoll(dims.c_str(), &end, 10);
  if (end != dims.c_str() + x) fail("rows is not an integer");
  s.cols = std::strtoll(dims.c_str() + x + 1, &end, 10);
  if (*end != '\0') fail("cols is not an integer");
  if (c2 != std::string_view::npos) {
    std::string_view types = rest.substr(c2 + 1);
    size_t arrow = types.find("->");
    auto in = parse_dtype(types.substr(0, arrow));
    if (!in) fail(fmt::format("unknown dtype '{}'", types.substr(0, arrow)));
    s.in = s.out = *in;
    if (arrow != std::string_view::npos) {
      auto out = parse_dtype(types.substr(arrow + 2));
      if (!out) fail(fmt::format("unknown dtype '{}'", types.substr(arrow + 2)));
      s.out = *out;
    }
  }
  if (std::string why = s.invalid_reason(); !why.empty()) fail(why);
  return s;
}

std::string RowOpSpec::invalid_reason() const {
  if (rows < 1 || cols < 1) return fmt::format("sizes must be >= 1 (rows={}, cols={})", rows, cols);
  if (rows > (int64_t(1) << 40) || cols > (int64_t(1) << 24))
    return "sizes too large (cols up to 16M, rows up to 2^40)";
  for (DType t : {in, out})
    if (is_fp8(t)) return "fp8 is not supported by the row ops (bf16, f16, f32)";
  if (residual && kind != RowOpKind::rmsnorm) return "+residual applies to rmsnorm";
  if (valid_len && kind != RowOpKind::softmax) return "+valid applies to softmax";
  return "";
}

double RowOpSpec::bytes() const {
  double elems = double(rows) * double(cols);
  double b = elems * (dtype_bytes(in) + dtype_bytes(out));
  if (residual) b += 2.0 * elems * dtype_bytes(in);                       // residual in, sum out
  if (kind != RowOpKind::softmax) b += double(cols) * dtype_bytes(in);    // weight
  if (kind == RowOpKind::layernorm) b += double(cols) * dtype_bytes(in);  // bias
  if (valid_len) b += double(rows) * 4;
  return b;
}

}  // namespace gf

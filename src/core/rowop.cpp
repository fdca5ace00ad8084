#include "gemmforge/rowop.hpp"

#include <fmt/format.h>

#include "core/codes.hpp"
#include "core/strings.hpp"
#include "gemmforge/error.hpp"

namespace gf {

std::string_view to_string(RowOpKind k) { return code_name(kRowOpKindNames, k); }

std::string RowOpSpec::key() const {
  std::string s(to_string(kind));
  if (residual) s += "+residual";
  if (valid_len) s += "+valid";
  s += fmt::format(":{}x{}:{}", rows, cols, to_string(in));
  if (out != in) s += fmt::format("->{}", to_string(out));
  return s;
}

RowOpSpec RowOpSpec::parse(std::string_view text) {
  RowOpSpec s;
  auto fail = [&](const std::string& why) {
    GF_FAIL("bad op {}: {} (expected OP[+residual|+valid]:ROWSxCOLS[:dtype[->out]])", quote(text), why);
  };
  const std::vector<std::string_view> fields = split(text, ':');
  if (fields.size() < 2 || fields.size() > 3) fail("expected two or three ':'-separated fields");
  const std::vector<std::string_view> words = split(fields[0], '+');
  auto kind = parse_code<RowOpKind>(kRowOpKindNames, words[0]);
  if (!kind) fail(fmt::format("unknown op {} (softmax, rmsnorm, layernorm)", quote(words[0])));
  s.kind = *kind;
  for (size_t i = 1; i < words.size(); ++i) {
    bool& flag = words[i] == "residual" ? s.residual : s.valid_len;
    if (words[i] != "residual" && words[i] != "valid") fail(fmt::format("unknown flag {}", quote(words[i])));
    if (flag) fail(fmt::format("flag {} given twice", quote(words[i])));
    flag = true;
  }
  const std::vector<std::string_view> dims = split(fields[1], 'x');
  if (dims.size() != 2) fail("sizes are ROWSxCOLS");
  auto rows = parse_int(dims[0]), cols = parse_int(dims[1]);
  if (!rows || !cols) fail("sizes are decimal integers");
  s.rows = *rows;
  s.cols = *cols;
  if (fields.size() == 3) {
    const std::string_view types = fields[2];
    const size_t arrow = types.find("->");
    auto in = parse_dtype(types.substr(0, arrow));
    if (!in) fail(fmt::format("unknown dtype {}", quote(types.substr(0, arrow))));
    s.in = s.out = *in;
    if (arrow != std::string_view::npos) {
      auto out = parse_dtype(types.substr(arrow + 2));
      if (!out) fail(fmt::format("unknown dtype {}", quote(types.substr(arrow + 2))));
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

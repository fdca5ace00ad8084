#include "gemmforge/problem.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <vector>

#include "gemmforge/error.hpp"

namespace gf {
namespace {

std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t end = s.find(sep, start);
    parts.push_back(s.substr(start, end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  return parts;
}

bool parse_int(std::string_view s, int64_t& out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

bool parse_float(std::string_view s, float& out) {
  std::string copy(s);  // from_chars for float is not in every libstdc++ we build with
  char* end = nullptr;
  out = std::strtof(copy.c_str(), &end);
  return !copy.empty() && end == copy.c_str() + copy.size() && std::isfinite(out);
}

}  // namespace

std::string_view to_string(Activation a) {
  switch (a) {
    case Activation::none:
      return "none";
    case Activation::relu:
      return "relu";
    case Activation::gelu_erf:
      return "gelu";
    case Activation::gelu_tanh:
      return "gelu_tanh";
    case Activation::silu:
      return "silu";
  }
  return "?";
}

std::string_view to_string(Layout l) { return l == Layout::tn ? "tn" : "nn"; }

bool Epilogue::is_identity() const { return *this == Epilogue{}; }

std::string Epilogue::to_string() const {
  std::vector<std::string> tokens;
  if (scale == ScaleKind::tensor) tokens.push_back("scale=tensor");
  if (scale == ScaleKind::rowcol) tokens.push_back("scale=rowcol");
  if (alpha != 1.0f) tokens.push_back(fmt::format("alpha={}", alpha));
  if (bias == BiasKind::per_col) tokens.push_back("bias");
  if (bias == BiasKind::per_row) tokens.push_back("rowbias");
  if (beta == 1.0f)
    tokens.push_back("residual");
  else if (beta != 0.0f)
    tokens.push_back(fmt::format("beta={}", beta));
  if (act != Activation::none) tokens.emplace_back(gf::to_string(act));
  if (gate == GateKind::interleaved) tokens.push_back("swiglu");
  if (gate == GateKind::split) tokens.push_back("swiglu_split");
  return fmt::format("{}", fmt::join(tokens, "+"));
}

Epilogue parse_epilogue(std::string_view text) {
  Epilogue e;
  if (text.empty() || text == "none") return e;
  int beta_tokens = 0;  // "residual" is beta=1: two ways of giving beta contradict or repeat
  for (std::string_view tok : split(text, '+')) {
    if (tok == "residual" || tok.starts_with("beta="))
      GF_CHECK(++beta_tokens == 1, "epilogue '{}' gives beta twice ('residual' means beta=1)", text);
    auto value_of = [&](std::string_view prefix, float& out) {
      if (!tok.starts_with(prefix)) return false;
      GF_CHECK(parse_float(tok.substr(prefix.size()), out), "bad number in epilogue token '{}'", tok);
      return true;
    };
    auto set_act = [&](Activation a) {
      GF_CHECK(e.act == Activation::none, "epilogue '{}' names two activations", text);
      e.act = a;
    };
    if (value_of("alpha=", e.alpha) || value_of("beta=", e.beta)) continue;
    if (tok == "bias")
      e.bias = BiasKind::per_col;
    else if (tok == "rowbias")
      e.bias = BiasKind::per_row;
    else if (tok == "residual")
      e.beta = 1.0f;
    else if (tok == "relu")
      set_act(Activation::relu);
    else if (tok == "gelu")
      set_act(Activation::gelu_erf);
    else if (tok == "gelu_tanh")
      set_act(Activation::gelu_tanh);
    else if (tok == "silu")
      set_act(Activation::silu);
    else if (tok == "swiglu")
      e.gate = GateKind::interleaved;
    else if (tok == "swiglu_split")
      e.gate = GateKind::split;
    else if (tok == "scale=tensor")
      e.scale = ScaleKind::tensor;
    else if (tok == "scale=rowcol")
      e.scale = ScaleKind::rowcol;
    else
      GF_FAIL(
          "unknown epilogue '{}' (known: bias, rowbias, residual, relu, gelu, gelu_tanh, silu, "
          "swiglu, swiglu_split, alpha=X, beta=X, scale=tensor, scale=rowcol)",
          tok);
  }
  return e;
}

int64_t GemmProblem::out_cols() const { return epilogue.gate == GateKind::none ? n : n / 2; }

double GemmProblem::min_bytes() const {
  double in = double(dtype_bytes(a)) * (double(m) * k + double(n) * k);
  double d = double(dtype_bytes(out)) * double(m) * out_cols();
  double c = epilogue.has_c() ? d : 0.0;
  return double(batch) * (in + d + c);
}

std::string GemmProblem::key() const {
  std::string s = fmt::format("{}x{}x{}", m, n, k);
  if (batch != 1) s += fmt::format("x{}", batch);
  s += fmt::format(":{}", gf::to_string(a));
  bool default_out = is_fp8(a) ? out == DType::bf16 : out == a;
  if (!default_out) s += fmt::format("->{}", gf::to_string(out));
  if (layout != Layout::tn) s += fmt::format(":{}", gf::to_string(layout));
  if (!epilogue.is_identity()) s += fmt::format(":{}", epilogue.to_string());
  return s;
}

std::string GemmProblem::invalid_reason() const {
  constexpr int64_t kMaxDim = std::numeric_limits<int32_t>::max();
  if (m < 1 || n < 1 || k < 1 || batch < 1)
    return fmt::format("sizes must be >= 1 (M={}, N={}, K={}, batch={})", m, n, k, batch);
  if (m > kMaxDim || n > kMaxDim || k > kMaxDim || batch > kMaxDim)
    return fmt::format("a size exceeds 2^31-1 (M={}, N={}, K={}, batch={})", m, n, k, batch);
  // Every operand, in bytes and with its batch, must be addressable with 63-bit offsets.
  for (auto [rows, cols] : {std::pair{m, k}, std::pair{n, k}, std::pair{m, n}}) {
    int64_t elems = 0, total = 0;
    if (__builtin_mul_overflow(rows, cols, &elems) || __builtin_mul_overflow(elems, batch, &total) ||
        __builtin_mul_overflow(total, int64_t(8), &total))
      return fmt::format("an operand of {}x{} (batch {}) overflows 64-bit byte offsets", rows, cols, batch);
  }
  if (a == DType::f32) return "f32 inputs are not supported (use bf16 or f16, or fp8 e4m3/e5m2)";
  if (is_fp8(out)) return "fp8 outputs are not supported (use bf16, f16 or f32)";
  if (is_fp8(a) && layout != Layout::tn) return "fp8 inputs need layout tn (W row-major N x K)";
  if (epilogue.scale != ScaleKind::none && !is_fp8(a)) return "scales apply only to fp8 inputs";
  const Epilogue& e = epilogue;
  if (e.gate != GateKind::none) {
    if (n % 2 != 0) return fmt::format("swiglu needs an even N (N={})", n);
    if (e.act != Activation::none) return "swiglu already applies silu; drop the activation";
    if (e.has_c()) return "swiglu with a residual is not supported";
    if (e.bias == BiasKind::per_row) return "swiglu with a per-row bias is not supported";
  }
  return "";
}

void GemmProblem::validate() const {
  std::string why = invalid_reason();
  GF_CHECK(why.empty(), "invalid problem {}: {}", key(), why);
}

void check_epilogue_args(const GemmProblem& problem, const GemmArgs& args, std::string_view who) {
  GF_CHECK(!problem.epilogue.has_c() || args.c, "{} {}: the epilogue reads C but C is null", who, problem.key());
  if (problem.epilogue.bias == BiasKind::none) return;
  GF_CHECK(args.bias, "{} {}: the epilogue adds a bias but bias is null", who, problem.key());
  const bool per_row = problem.epilogue.bias == BiasKind::per_row;
  const int64_t want = per_row ? problem.m : problem.n;
  GF_CHECK(args.bias_len == 0 || int64_t(args.bias_len) == want, "{} {}: bias has {} elements; a per-{} bias needs {}",
           who, problem.key(), args.bias_len, per_row ? "row" : "column", want);
}

void check_gemm_args(const GemmProblem& problem, const GemmArgs& args) {
  problem.validate();
  GF_CHECK(args.a && args.b && args.d, "gemm {}: A, B and D must be non-null", problem.key());
  check_epilogue_args(problem, args, "gemm");
}

GemmProblem GemmProblem::parse(std::string_view spec) {
  GemmProblem p;
  std::vector<std::string_view> fields = split(spec, ':');
  std::vector<std::string_view> dims = split(fields[0], 'x');
  GF_CHECK(dims.size() == 3 || dims.size() == 4, "bad problem '{}': expected MxNxK[xBATCH][:dtype][:tn|nn][:epilogue]",
           spec);
  int64_t* slots[] = {&p.m, &p.n, &p.k, &p.batch};
  for (size_t i = 0; i < dims.size(); ++i)
    GF_CHECK(parse_int(dims[i], *slots[i]), "bad problem '{}': '{}' is not an integer size", spec, dims[i]);

  bool have_dtype = false, have_layout = false, have_epilogue = false;
  for (size_t i = 1; i < fields.size(); ++i) {
    std::string_view f = fields[i];
    std::vector<std::string_view> io = split(f, '>');
    if (io.size() == 2 && io[0].ends_with('-')) io[0].remove_suffix(1);
    if (auto in = parse_dtype(io[0]); in && io.size() <= 2) {
      GF_CHECK(!have_dtype, "bad problem '{}': two dtype fields", spec);
      have_dtype = true;
      p.a = *in;
      p.out = is_fp8(*in) ? DType::bf16 : *in;
      if (io.size() == 2) {
        auto out = parse_dtype(io[1]);
        GF_CHECK(out, "bad problem '{}': unknown output dtype '{}'", spec, io[1]);
        p.out = *out;
      }
    } else if (f == "tn" || f == "nn") {
      GF_CHECK(!have_layout, "bad problem '{}': two layout fields", spec);
      have_layout = true;
      p.layout = f == "tn" ? Layout::tn : Layout::nn;
    } else {
      GF_CHECK(!have_epilogue, "bad problem '{}': unknown field '{}' (dtype? bf16, f16, e4m3)", spec, f);
      have_epilogue = true;
      try {
        p.epilogue = parse_epilogue(f);
      } catch (const Error& e) {
        GF_FAIL("bad problem '{}': {}", spec, e.what());
      }
    }
  }
  std::string why = p.invalid_reason();
  GF_CHECK(why.empty(), "bad problem '{}': {}", spec, why);
  return p;
}

}  // namespace gf

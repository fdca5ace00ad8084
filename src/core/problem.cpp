#include "gemmforge/problem.hpp"

#include <fmt/format.h>

#include <limits>
#include <tuple>
#include <vector>

#include "core/codes.hpp"
#include "core/strings.hpp"
#include "gemmforge/error.hpp"

namespace gf {
namespace {

// Spec tokens of the bias, gate and scale kinds; an activation is spelled as its code name.
constexpr std::pair<const char*, BiasKind> kBiasTokens[] = {{"bias", BiasKind::col}, {"rowbias", BiasKind::row}};
constexpr std::pair<const char*, GateKind> kGateTokens[] = {{"swiglu", GateKind::interleaved},
                                                            {"swiglu_split", GateKind::split}};
constexpr std::pair<const char*, ScaleKind> kScaleTokens[] = {
    {"scale=tensor", ScaleKind::tensor}, {"scale=rowcol", ScaleKind::rowcol}, {"scale=block128", ScaleKind::block128}};
// The bare words the field uses for them (torch._scaled_mm's "rowwise"; `e4m3->bf16:block128`),
// read as the same terms; keys spell the scale=.
constexpr std::pair<const char*, ScaleKind> kScaleWords[] = {{"tensor", ScaleKind::tensor},
                                                             {"rowcol", ScaleKind::rowcol},
                                                             {"rowwise", ScaleKind::rowcol},
                                                             {"block128", ScaleKind::block128}};

template <class Kind, size_t N>
std::optional<Kind> token_of(const std::pair<const char*, Kind> (&tokens)[N], std::string_view tok) {
  for (const auto& [text, kind] : tokens)
    if (tok == text) return kind;
  return std::nullopt;
}

std::optional<ScaleKind> scale_of(std::string_view tok) {
  if (auto sc = token_of(kScaleTokens, tok)) return sc;
  return token_of(kScaleWords, tok);
}

// Every term an epilogue spec takes, for the messages that name them.
std::string epilogue_terms() {
  std::vector<std::string> known = {"bias", "rowbias", "residual"};
  for (size_t i = 1; i < std::size(kActivationNames); ++i) known.emplace_back(kActivationNames[i]);
  for (const auto& [t, g] : kGateTokens) known.emplace_back(t);
  for (const auto& [t, sc] : kScaleTokens) known.emplace_back(t);
  std::vector<std::string> words;
  for (const auto& [t, sc] : kScaleWords) words.emplace_back(t);
  return fmt::format("{} (or {}), alpha=X, beta=X", fmt::join(known, ", "), fmt::join(words, ", "));
}

template <class Kind, size_t N>
const char* text_of(const std::pair<const char*, Kind> (&tokens)[N], Kind kind) {
  for (const auto& [text, k] : tokens)
    if (k == kind) return text;
  return "";
}

}  // namespace

std::string_view to_string(Activation a) { return code_name(kActivationNames, a); }
std::string_view to_string(BiasKind b) { return code_name(kBiasKindNames, b); }
std::string_view to_string(GateKind g) { return code_name(kGateKindNames, g); }
std::string_view to_string(ScaleKind s) { return code_name(kScaleKindNames, s); }
std::string_view to_string(Layout l) { return l == Layout::tn ? "tn" : "nn"; }

bool Epilogue::is_identity() const { return *this == Epilogue{}; }

std::string Epilogue::to_string() const {
  std::vector<std::string> tokens;
  if (scale != ScaleKind::none) tokens.emplace_back(text_of(kScaleTokens, scale));
  if (alpha != 1.0f) tokens.push_back(fmt::format("alpha={}", alpha));
  if (bias != BiasKind::none) tokens.emplace_back(text_of(kBiasTokens, bias));
  if (beta == 1.0f)
    tokens.push_back("residual");
  else if (beta != 0.0f)
    tokens.push_back(fmt::format("beta={}", beta));
  if (act != Activation::none) tokens.emplace_back(gf::to_string(act));
  if (gate != GateKind::none) tokens.emplace_back(text_of(kGateTokens, gate));
  return fmt::format("{}", fmt::join(tokens, "+"));
}

Epilogue parse_epilogue(std::string_view text) {
  Epilogue e;
  if (text.empty() || text == "none") return e;
  // Each part of the epilogue may be given once: a second bias, gate, activation, scale, alpha or
  // beta (residual is beta=1) contradicts or repeats the first, and is refused.
  std::vector<std::string_view> given;
  auto once = [&](std::string_view part, std::string_view tok) {
    for (std::string_view g : given)
      GF_CHECK(g != part, "epilogue {} gives the {} twice (at {})", quote(text), part, quote(tok));
    given.push_back(part);
  };
  for (std::string_view tok : split(text, '+')) {
    GF_CHECK(!tok.empty(), "epilogue {} has an empty term", quote(text));
    auto number = [&](std::string_view prefix, float& out) {
      auto v = parse_float(tok.substr(prefix.size()));
      GF_CHECK(v, "epilogue term {}: {} needs a decimal number that fp32 holds (not 0 by underflow)", quote(tok),
               prefix.substr(0, prefix.size() - 1));
      out = *v;
    };
    if (tok.starts_with("alpha=")) {
      once("alpha", tok);
      number("alpha=", e.alpha);
    } else if (tok.starts_with("beta=") || tok == "residual") {
      once("beta (residual)", tok);
      if (tok == "residual")
        e.beta = 1.0f;
      else
        number("beta=", e.beta);
    } else if (auto b = token_of(kBiasTokens, tok)) {
      once("bias", tok);
      e.bias = *b;
    } else if (auto g = token_of(kGateTokens, tok)) {
      once("gate", tok);
      e.gate = *g;
    } else if (auto sc = scale_of(tok)) {
      once("scale", tok);
      e.scale = *sc;
    } else if (auto a = parse_code<Activation>(kActivationNames, tok); a && *a != Activation::none) {
      once("activation", tok);
      e.act = *a;
    } else {
      GF_FAIL("unknown epilogue term {} (known: {})", quote(tok), epilogue_terms());
    }
  }
  return e;
}

int64_t GemmProblem::out_cols() const { return epilogue.gate == GateKind::none ? n : n / 2; }

double GemmProblem::min_bytes() const {
  double in = double(dtype_bytes(a)) * double(m) * k + double(dtype_bytes(b)) * double(n) * k;
  double d = double(dtype_bytes(out)) * double(m) * out_cols();
  double c = epilogue.has_c() ? double(dtype_bytes(epilogue_dtype())) * double(m) * out_cols() : 0.0;
  return double(batch) * (in + d + c) + 4.0 * double(scale_a_count() + scale_b_count());
}

int64_t GemmProblem::scale_a_count() const {
  switch (epilogue.scale) {
    case ScaleKind::none:
      return 0;
    case ScaleKind::tensor:
      return 1;
    case ScaleKind::rowcol:
      return m;
    case ScaleKind::block128:
      return (k + 127) / 128 * m;
  }
  return 0;
}

int64_t GemmProblem::scale_b_count() const {
  switch (epilogue.scale) {
    case ScaleKind::none:
      return 0;
    case ScaleKind::tensor:
      return 1;
    case ScaleKind::rowcol:
      return n;
    case ScaleKind::block128:
      return (n + 127) / 128 * ((k + 127) / 128);
  }
  return 0;
}

std::string GemmProblem::key() const {
  std::string s = fmt::format("{}x{}x{}", m, n, k);
  if (batch != 1) s += fmt::format("x{}", batch);
  s += fmt::format(":{}", gf::to_string(a));
  if (b != a) s += fmt::format("x{}", gf::to_string(b));
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
  if (b != a && !(is_fp8(a) && is_fp8(b)))
    return fmt::format("A and B differ ({} x {}): only fp8 inputs may mix (e4m3 and e5m2)", gf::to_string(a),
                       gf::to_string(b));
  if (is_fp8(out) && !is_fp8(a)) return "fp8 outputs need fp8 inputs (use bf16, f16 or f32)";
  if (is_fp8(out) && epilogue.gate != GateKind::none) return "fp8 outputs with a SwiGLU gate are not supported";
  if (is_fp8(a) && layout != Layout::tn) return "fp8 inputs need layout tn (W row-major N x K)";
  if (epilogue.scale != ScaleKind::none && !is_fp8(a)) return "scales apply only to fp8 inputs";
  if (epilogue.scale == ScaleKind::block128 && batch != 1) return "block128 scales are for batch 1";
  const Epilogue& e = epilogue;
  if (e.gate != GateKind::none) {
    if (n % 2 != 0) return fmt::format("swiglu needs an even N (N={})", n);
    if (e.act != Activation::none) return "swiglu already applies silu; drop the activation";
    if (e.has_c()) return "swiglu with a residual is not supported";
    if (e.bias == BiasKind::row) return "swiglu with a per-row bias is not supported";
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
  const bool per_row = problem.epilogue.bias == BiasKind::row;
  const int64_t want = per_row ? problem.m : problem.n;
  GF_CHECK(args.bias_len == 0 || int64_t(args.bias_len) == want, "{} {}: bias has {} elements; a per-{} bias needs {}",
           who, problem.key(), args.bias_len, per_row ? "row" : "column", want);
}

size_t pointer_alignment(const GemmArgs& args) {
  uintptr_t bits = 256;
  for (const void* ptr : {args.a, args.b, static_cast<const void*>(args.d), args.c, args.bias})
    if (ptr) bits |= reinterpret_cast<uintptr_t>(ptr);
  return size_t(bits & (~bits + 1));  // the lowest set bit
}

void check_gemm_args(const GemmProblem& problem, const GemmArgs& args) {
  problem.validate();
  GF_CHECK(args.a && args.b && args.d, "gemm {}: A, B and D must be non-null", problem.key());
  GF_CHECK(problem.epilogue.scale == ScaleKind::none || (args.scale_a && args.scale_b),
           "gemm {}: the fp8 scales scale_a and scale_b must be non-null", problem.key());
  for (auto [name, len, want] : {std::tuple{"scale_a", args.scale_a_len, problem.scale_a_count()},
                                 std::tuple{"scale_b", args.scale_b_len, problem.scale_b_count()}})
    GF_CHECK(len == 0 || int64_t(len) == want, "gemm {}: {} has {} floats; scale={} needs {}", problem.key(), name, len,
             to_string(problem.epilogue.scale), want);
  GF_CHECK(!is_fp8(problem.out) || args.scale_d, "gemm {}: D is fp8, so its scale scale_d must be non-null",
           problem.key());
  check_epilogue_args(problem, args, "gemm");
}

GemmProblem GemmProblem::parse(std::string_view spec) {
  GemmProblem p;
  const std::string q = quote(spec);
  const std::vector<std::string_view> fields = split(spec, ':');
  const std::vector<std::string_view> dims = split(fields[0], 'x');
  GF_CHECK(dims.size() == 3 || dims.size() == 4,
           "bad problem {}: expected MxNxK[xBATCH][:dtype[xdtype_b][->out]][:tn|nn][:epilogue]", q);
  int64_t* slots[] = {&p.m, &p.n, &p.k, &p.batch};
  for (size_t i = 0; i < dims.size(); ++i) {
    auto v = parse_int(dims[i]);
    GF_CHECK(v, "bad problem {}: {} is not a size (a decimal integer)", q, quote(dims[i]));
    *slots[i] = *v;
  }
  bool have_dtype = false, have_layout = false, have_epilogue = false;
  for (size_t i = 1; i < fields.size(); ++i) {
    const std::string_view f = fields[i];
    GF_CHECK(!f.empty(), "bad problem {}: field {} is empty", q, i + 1);
    const size_t arrow = f.find("->");
    const std::string_view inputs = f.substr(0, arrow);
    const size_t times = inputs.find('x');
    if (auto in = parse_dtype(inputs.substr(0, times))) {
      GF_CHECK(!have_dtype, "bad problem {}: two dtype fields", q);
      have_dtype = true;
      p.a = p.b = *in;
      if (times != std::string_view::npos) {
        auto b = parse_dtype(inputs.substr(times + 1));
        GF_CHECK(b, "bad problem {}: unknown dtype of B {}", q, quote(inputs.substr(times + 1)));
        p.b = *b;
      }
      p.out = is_fp8(*in) ? DType::bf16 : *in;
      if (arrow != std::string_view::npos) {
        auto out = parse_dtype(f.substr(arrow + 2));
        GF_CHECK(out, "bad problem {}: unknown output dtype {}", q, quote(f.substr(arrow + 2)));
        p.out = *out;
      }
    } else if (f == "tn" || f == "nn") {
      GF_CHECK(!have_layout, "bad problem {}: two layout fields", q);
      have_layout = true;
      p.layout = f == "tn" ? Layout::tn : Layout::nn;
    } else {
      GF_CHECK(!have_epilogue, "bad problem {}: unknown field {} (a dtype such as bf16, f16, e4m3, or bf16->f32?)", q,
               quote(f));
      have_epilogue = true;
      try {
        p.epilogue = parse_epilogue(f);
      } catch (const Error& e) {
        // One word that is no epilogue term, where no dtype came yet, may as well be a dtype nobody
        // knows ("int8", "tf32->bf16").
        GF_CHECK(have_dtype || f.find_first_of("+=") != std::string_view::npos,
                 "bad problem {}: {} is neither a dtype ({}), a layout (tn, nn) nor an epilogue term ({})", q, quote(f),
                 fmt::join(kDTypeNames, ", "), epilogue_terms());
        GF_FAIL("bad problem {}: {}", q, e.what());
      }
    }
  }
  const std::string why = p.invalid_reason();
  GF_CHECK(why.empty(), "bad problem {}: {}", q, why);
  return p;
}

}  // namespace gf

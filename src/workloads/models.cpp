#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/embedded.hpp"
#include "core/strings.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/workloads.hpp"

namespace gf {
namespace {

constexpr std::string_view kPrefix = "workloads/", kSuffix = ".config.json";
// A config.json is a few KB: anything past this is no model config (or /dev/zero).
constexpr std::streamsize kMaxConfigBytes = 4 << 20;
// Every size of a shipped or sensible model is far below this; products of two of them (a GEMM's
// N) then stay far inside int64 and GemmProblem's own bounds.
constexpr int64_t kMaxModelSize = int64_t(1) << 24;

int64_t positive_field(const nlohmann::json& config, const std::string& model, const char* field) {
  GF_CHECK(config.contains(field), "model config {} lacks \"{}\"", quote(model), field);
  const auto& v = config[field];
  GF_CHECK(v.is_number_integer() && !v.is_number_float(), "model config {}: \"{}\" must be a positive integer, not {}",
           quote(model), field, quote(v.dump()));
  const int64_t n = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(kMaxModelSize) ? -1 : v.get<int64_t>();
  GF_CHECK(n > 0 && n <= kMaxModelSize, "model config {}: \"{}\" must be a positive integer up to {}, not {}",
           quote(model), field, kMaxModelSize, quote(v.dump()));
  return n;
}

}  // namespace

ModelShape ModelShape::from_config(const nlohmann::json& config, std::string name) {
  GF_CHECK(config.is_object(), "model config {} is not a JSON object", quote(name));
  ModelShape s;
  s.name = std::move(name);
  s.hidden = positive_field(config, s.name, "hidden_size");
  s.heads = positive_field(config, s.name, "num_attention_heads");
  s.kv_heads = config.contains("num_key_value_heads") && !config["num_key_value_heads"].is_null()
                   ? positive_field(config, s.name, "num_key_value_heads")
                   : s.heads;
  if (config.contains("head_dim") && !config["head_dim"].is_null()) {
    s.head_dim = positive_field(config, s.name, "head_dim");
  } else {
    GF_CHECK(s.hidden % s.heads == 0, "model config {}: hidden_size {} is not a multiple of {} heads", quote(s.name),
             s.hidden, s.heads);
    s.head_dim = s.hidden / s.heads;
  }
  GF_CHECK(s.heads % s.kv_heads == 0, "model config {}: {} attention heads do not share {} key/value heads evenly",
           quote(s.name), s.heads, s.kv_heads);
  s.intermediate = positive_field(config, s.name, "intermediate_size");
  s.vocab = positive_field(config, s.name, "vocab_size");
  // Qwen2 has q, k and v biases without saying so in its config.
  s.attention_bias = config.value("model_type", nlohmann::json()) == "qwen2";
  if (config.contains("attention_bias")) {
    GF_CHECK(config["attention_bias"].is_boolean(), "model config {}: \"attention_bias\" must be true or false, not {}",
             quote(s.name), quote(config["attention_bias"].dump()));
    s.attention_bias = config["attention_bias"].get<bool>();
  }
  return s;
}

std::vector<std::string> builtin_models() {
  std::vector<std::string> names;
  for (const auto& [path, text] : embedded::files())
    if (path.starts_with(kPrefix) && path.ends_with(kSuffix))
      names.push_back(path.substr(kPrefix.size(), path.size() - kPrefix.size() - kSuffix.size()));
  return names;
}

ModelShape load_model(const std::string& name_or_path) {
  std::string text;
  std::string name = name_or_path;
  auto it = embedded::files().find(std::string(kPrefix) + name_or_path + std::string(kSuffix));
  if (it != embedded::files().end()) {
    text = std::string(it->second);
  } else {
    std::error_code ec;
    GF_CHECK(std::filesystem::is_regular_file(name_or_path, ec),
             "unknown model {}: not a shipped model ({}) and not a config.json file", quote(name_or_path),
             fmt::join(builtin_models(), ", "));
    std::ifstream in(name_or_path);
    GF_CHECK(in.good(), "cannot read model config {}", quote(name_or_path));
    text.resize(size_t(kMaxConfigBytes) + 1);
    in.read(text.data(), kMaxConfigBytes + 1);
    text.resize(size_t(in.gcount()));
    GF_CHECK(std::streamsize(text.size()) <= kMaxConfigBytes, "model config {} is larger than {} bytes",
             quote(name_or_path), kMaxConfigBytes);
    name = std::filesystem::path(name_or_path).parent_path().filename().string();
    if (name.empty()) name = std::filesystem::path(name_or_path).stem().string();
  }
  nlohmann::json config = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  GF_CHECK(!config.is_discarded(), "model config {} is not valid JSON", quote(name_or_path));
  return ModelShape::from_config(config, name);
}

std::vector<ModelGemm> model_gemms(const ModelShape& s, const std::vector<int64_t>& tokens, DType dtype, Fuse fuse) {
  struct Row {
    const char* name;
    int64_t n, k;
    const char* natural_epilogue;
  };
  const Row rows[] = {
      {"qkv", (s.heads + 2 * s.kv_heads) * s.head_dim, s.hidden, s.attention_bias ? "bias" : ""},
      {"o", s.hidden, s.heads * s.head_dim, "residual"},
      {"gate_up", 2 * s.intermediate, s.hidden, "swiglu"},
      {"down", s.hidden, s.intermediate, "residual"},
      {"lm_head", s.vocab, s.hidden, ""},
  };
  std::vector<ModelGemm> gemms;
  for (int64_t m : tokens) {
    for (const Row& r : rows) {
      GemmProblem p;
      p.m = m, p.n = r.n, p.k = r.k;
      p.a = p.b = dtype;
      p.out = is_fp8(dtype) ? DType::bf16 : dtype;
      if (fuse == Fuse::natural) p.epilogue = parse_epilogue(r.natural_epilogue);
      p.validate();
      gemms.push_back({s.name, r.name, p});
    }
  }
  return gemms;
}

}  // namespace gf

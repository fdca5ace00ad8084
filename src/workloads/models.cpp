#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/embedded.hpp"
#include "gemmforge/error.hpp"
#include "gemmforge/workloads.hpp"

namespace gf {
namespace {

constexpr std::string_view kPrefix = "workloads/", kSuffix = ".config.json";

int64_t positive_field(const nlohmann::json& config, const std::string& model, const char* field) {
  GF_CHECK(config.contains(field), "model config '{}' lacks '{}'", model, field);
  GF_CHECK(config[field].is_number_integer() && config[field].get<int64_t>() > 0,
           "model config '{}': '{}' must be a positive integer", model, field);
  return config[field].get<int64_t>();
}

}  // namespace

ModelShape ModelShape::from_config(const nlohmann::json& config, std::string name) {
  GF_CHECK(config.is_object(), "model config '{}' is not a JSON object", name);
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
    GF_CHECK(s.hidden % s.heads == 0, "model config '{}': hidden_size {} is not a multiple of {} heads", s.name,
             s.hidden, s.heads);
    s.head_dim = s.hidden / s.heads;
  }
  s.intermediate = positive_field(config, s.name, "intermediate_size");
  s.vocab = positive_field(config, s.name, "vocab_size");
  s.attention_bias = config.value("attention_bias", false);
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
    std::ifstream in(name_or_path);
    GF_CHECK(in.good(), "unknown model '{}': not a shipped model ({}) and not a readable config.json", name_or_path,
             fmt::join(builtin_models(), ", "));
    text.assign(std::istreambuf_iterator<char>(in), {});
    name = std::filesystem::path(name_or_path).parent_path().filename().string();
    if (name.empty()) name = std::filesystem::path(name_or_path).stem().string();
  }
  nlohmann::json config = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  GF_CHECK(!config.is_discarded(), "model config '{}' is not valid JSON", name_or_path);
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
      p.a = dtype;
      p.out = is_fp8(dtype) ? DType::bf16 : dtype;
      if (fuse == Fuse::natural) p.epilogue = parse_epilogue(r.natural_epilogue);
      p.validate();
      gemms.push_back({s.name, r.name, p});
    }
  }
  return gemms;
}

}  // namespace gf

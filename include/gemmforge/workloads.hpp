#pragma once
// Transformer workloads: a decoder model's shape (from a Hugging Face config.json) and the GEMMs
// one layer and the output head run for a batch of M tokens.
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "gemmforge/problem.hpp"

namespace gf {

struct ModelShape {
  std::string name;
  int64_t hidden = 0, heads = 0, kv_heads = 0, head_dim = 0, intermediate = 0, vocab = 0;
  bool attention_bias = false;

  // Reads hidden_size, num_attention_heads, num_key_value_heads (default: heads), head_dim
  // (default: hidden / heads), intermediate_size, vocab_size, attention_bias. Throws gf::Error
  // naming the missing or bad field.
  static ModelShape from_config(const nlohmann::json& config, std::string name);
};

// none: plain GEMMs. natural: the epilogues a decoder layer fuses: qkv + bias (when the model has
// one), o + residual, gate_up + SwiGLU (interleaved), down + residual.
enum class Fuse { none, natural };

struct ModelGemm {
  std::string model;
  std::string name;  // qkv, o, gate_up, down, lm_head
  GemmProblem problem;
};

// Models shipped in the binary: llama3-8b, llama3-70b, mistral-7b.
std::vector<std::string> builtin_models();
// A shipped model by name, or a config.json by path. Throws gf::Error.
ModelShape load_model(const std::string& name_or_path);
std::vector<ModelGemm> model_gemms(const ModelShape& model, const std::vector<int64_t>& tokens,
                                   DType dtype = DType::bf16, Fuse fuse = Fuse::none);

}  // namespace gf

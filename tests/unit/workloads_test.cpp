#include "gemmforge/workloads.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "gemmforge/error.hpp"

using namespace gf;

TEST(Workloads, ShipsTheFittedAndTheHeldOutModels) {
  auto names = builtin_models();
  for (const char* want : {"llama3-8b", "llama3-70b", "mistral-7b", "qwen2.5-7b", "phi3-mini"})
    EXPECT_NE(std::find(names.begin(), names.end(), want), names.end()) << want;
}

TEST(Workloads, Llama3_8bGemms) {
  auto gemms = model_gemms(load_model("llama3-8b"), {16, 128, 4096});
  ASSERT_EQ(gemms.size(), 15u);
  auto find = [&](const std::string& name, int64_t m) {
    for (const auto& g : gemms)
      if (g.name == name && g.problem.m == m) return g.problem;
    ADD_FAILURE() << name;
    return GemmProblem{};
  };
  EXPECT_EQ(find("qkv", 16).key(), "16x6144x4096:bf16");
  EXPECT_EQ(find("o", 128).key(), "128x4096x4096:bf16");
  EXPECT_EQ(find("gate_up", 4096).key(), "4096x28672x4096:bf16");
  EXPECT_EQ(find("down", 4096).key(), "4096x4096x14336:bf16");
  EXPECT_EQ(find("lm_head", 4096).key(), "4096x128256x4096:bf16");
}

TEST(Workloads, NaturalFusion) {
  auto gemms = model_gemms(load_model("llama3-70b"), {4096}, DType::bf16, Fuse::natural);
  ASSERT_EQ(gemms.size(), 5u);
  EXPECT_EQ(gemms[0].problem.key(), "4096x10240x8192:bf16");  // no attention bias in llama
  EXPECT_EQ(gemms[1].problem.key(), "4096x8192x8192:bf16:residual");
  EXPECT_EQ(gemms[2].problem.key(), "4096x57344x8192:bf16:swiglu");
  EXPECT_EQ(gemms[3].problem.key(), "4096x8192x28672:bf16:residual");
}

TEST(Workloads, HeldOutModelsHaveTheirOwnShapes) {
  // Qwen2 has q/k/v biases its config does not name; Phi-3's heads are 96 wide.
  auto qwen = model_gemms(load_model("qwen2.5-7b"), {77}, DType::bf16, Fuse::natural);
  EXPECT_EQ(qwen[0].problem.key(), "77x4608x3584:bf16:bias");
  EXPECT_EQ(qwen[3].problem.key(), "77x3584x18944:bf16:residual");
  auto phi = model_gemms(load_model("phi3-mini"), {1000});
  EXPECT_EQ(phi[0].problem.key(), "1000x9216x3072:bf16");
  EXPECT_EQ(phi[2].problem.key(), "1000x16384x3072:bf16");
}

TEST(Workloads, ReadsAnyHfConfig) {
  auto dir = std::filesystem::temp_directory_path() / "gf_wl_test/qwen";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "config.json") << R"({"hidden_size": 896, "num_attention_heads": 14,
    "num_key_value_heads": 2, "intermediate_size": 4864, "vocab_size": 151936, "attention_bias": true})";
  ModelShape s = load_model((dir / "config.json").string());
  EXPECT_EQ(s.name, "qwen");
  EXPECT_EQ(s.head_dim, 64);
  auto gemms = model_gemms(s, {7}, DType::bf16, Fuse::natural);
  EXPECT_EQ(gemms[0].problem.key(), "7x1152x896:bf16:bias");
}

TEST(Workloads, RejectsBadConfigs) {
  EXPECT_THROW(load_model("no-such-model"), Error);
  EXPECT_THROW(ModelShape::from_config(nlohmann::json::parse(R"({"hidden_size": 64})"), "x"), Error);
  EXPECT_THROW(ModelShape::from_config(
                   nlohmann::json::parse(
                       R"({"hidden_size": 65, "num_attention_heads": 2, "intermediate_size": 8, "vocab_size": 8})"),
                   "x"),
               Error);
  EXPECT_THROW(ModelShape::from_config(
                   nlohmann::json::parse(
                       R"({"hidden_size": -64, "num_attention_heads": 2, "intermediate_size": 8, "vocab_size": 8})"),
                   "x"),
               Error);
}

// What a fuzzer found: sizes that overflow, heads that do not share, wrong types, files that are no
// config (or never end). Each is one line that names the field or the file.
TEST(Workloads, RejectsHostileConfigs) {
  auto error_of = [](const std::string& json) {
    try {
      ModelShape::from_config(nlohmann::json::parse(json), "m");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const std::string base = R"("hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 14336, "vocab_size": 128256)";
  EXPECT_NE(error_of("{" + base + R"(, "num_key_value_heads": 9223372036854775807})").find("num_key_value_heads"),
            std::string::npos);
  EXPECT_NE(error_of("{" + base + R"(, "num_key_value_heads": 18446744073709551615})").find("num_key_value_heads"),
            std::string::npos);
  EXPECT_NE(error_of("{" + base + R"(, "num_key_value_heads": 5})").find("do not share"), std::string::npos);
  EXPECT_NE(error_of("{" + base + R"(, "head_dim": "128"})").find("\"head_dim\" must be a positive integer"),
            std::string::npos);
  EXPECT_NE(error_of("{" + base + R"(, "head_dim": 128.5})").find("head_dim"), std::string::npos);
  EXPECT_NE(error_of("{" + base + R"(, "attention_bias": "yes"})").find("attention_bias"), std::string::npos);
  EXPECT_NE(error_of(R"({"hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 14336})").find("vocab_size"),
            std::string::npos);
  // A valid-looking config whose product overflows a GEMM's size: refused by the problem itself.
  const auto wide = ModelShape::from_config(
      nlohmann::json::parse(
          R"({"hidden_size": 4096, "num_attention_heads": 65536, "head_dim": 65536, "intermediate_size": 8, "vocab_size": 8})"),
      "wide");
  EXPECT_THROW(model_gemms(wide, {16}), Error);

  auto load_error = [](const std::string& path) {
    try {
      load_model(path);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(load_error("/dev/zero").find("not a config.json file"), std::string::npos) << "reads forever otherwise";
  const auto dir = std::filesystem::temp_directory_path() / ("gf_models_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "big.json") << std::string(5 << 20, ' ');
  EXPECT_NE(load_error((dir / "big.json").string()).find("larger than"), std::string::npos);
  std::ofstream(dir / "bad.json") << "{\"hidden_size\": ";
  EXPECT_NE(load_error((dir / "bad.json").string()).find("not valid JSON"), std::string::npos);
  std::filesystem::remove_all(dir);
}


// Triton templates launched by gemmforge's own launcher, verified against the reference.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "backends/gemm/triton/space.hpp"
#include "gemmforge/backend.hpp"
#include "harness/gemm_bench.hpp"

using namespace gf;

class TritonGpuTest : public ::testing::TestWithParam<const char*> {};

TEST_P(TritonGpuTest, EveryFastCandidateVerifies) {
  auto triton = find_backend<GemmProblem>("triton");
  if (!triton->unavailable().empty()) GTEST_SKIP() << "Triton backend unavailable: " << triton->unavailable();
  GemmProblem p = GemmProblem::parse(GetParam());
  DeviceInfo dev = DeviceInfo::query();
  ASSERT_EQ(triton->supports(p), "");
  auto cands = triton->candidates(p, dev, {.level = Search::fast});
  harness::GemmBench bench(p, dev, std::random_device{}());
  for (const auto& c : cands) {
    auto report = triton->compile(p, c, true);
    ASSERT_TRUE(report.ok) << c.name << "\n" << report.log;
    auto kernel = triton->build(p, c);
    auto r = bench.measure(*kernel, false, {});
    EXPECT_TRUE(r.verified) << p.key() << " " << c.name << ": " << r.error;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, TritonGpuTest,
    ::testing::Values("1x1x8:bf16", "77x1000x1000:bf16", "1000x77x1000:f16->f32", "4096x4096x4096:bf16",
                      "300x640x512:bf16:nn", "200x256x128:bf16:bias+gelu_tanh", "130x512x256:bf16:swiglu",
                      "130x512x256:bf16:bias+swiglu_split", "100x384x256:bf16->f32:alpha=0.5+rowbias+residual+relu",
                      "16x6144x4096:bf16", "77x1000x1008:e4m3->bf16", "256x512x1024:e4m3->bf16:scale=tensor",
                      "130x384x512:e4m3->bf16:scale=rowcol+bias+relu", "64x128x256:e5m2->f16",
                      "130x384x512:e4m3xe5m2->bf16:scale=rowcol+bias", "77x128x256:e5m2xe4m3->f16"));

namespace {
void write_device(const std::string& path, const void* dev, size_t bytes) {
  std::string host(bytes, '\0');
  GF_CUDA_CHECK(cudaMemcpy(host.data(), dev, bytes, cudaMemcpyDeviceToHost));
  std::ofstream(path, std::ios::binary) << host;
}
}  // namespace

// gemmforge's launcher and Triton's own launcher run the same template on the same inputs: the
// outputs must agree bit for bit.
TEST(TritonGpu, LauncherMatchesTritonsOwnLaunch) {
  auto triton = find_backend<GemmProblem>("triton");
  if (!triton->unavailable().empty()) GTEST_SKIP() << "Triton backend unavailable: " << triton->unavailable();
  const std::string script = "tests/gpu/triton_own_launch.py";
  if (!std::filesystem::exists(script)) GTEST_SKIP() << "run from the repository root (" << script << " not found)";
  if (std::system("python3 -c 'import torch' >/dev/null 2>&1") != 0) GTEST_SKIP() << "torch is not installed";
  GemmProblem p = GemmProblem::parse("300x512x128:bf16:bias+relu");
  DeviceInfo dev = DeviceInfo::query();
  auto cands = triton->candidates(p, dev, {.level = Search::normal});
  auto dir = std::filesystem::temp_directory_path() / "gf_triton_own";
  std::filesystem::create_directories(dir);
  // The first candidate of each template.
  std::vector<Candidate> picked;
  for (const char* tmpl : {"mm", "mm_persistent_tma"})
    for (const auto& c : cands)
      if (c.config.at("template") == tmpl) {
        picked.push_back(c);
        break;
      }
  int compared = 0;
  for (const auto& c : picked) {
    auto cfg = triton_backend::TritonConfig::from_json(c.config);
    harness::GemmBench bench(p, dev, 5);
    GemmArgs args = bench.args(0);
    auto kernel = triton->build(p, c);
    kernel->launch(args, bench.stream());
    GF_CUDA_CHECK(cudaStreamSynchronize(bench.stream()));
    write_device((dir / "a").string(), args.a, size_t(p.m * p.k) * 2);
    write_device((dir / "b").string(), args.b, size_t(p.n * p.k) * 2);
    write_device((dir / "bias").string(), args.bias, size_t(p.n) * 2);
    write_device((dir / "ours").string(), args.d, size_t(p.m * p.n) * 2);
    nlohmann::json req = triton_backend::compile_request(cfg, p);
    nlohmann::json own = {{"template", cfg.tmpl},
                          {"constexprs", req["constexprs"]},
                          {"num_warps", cfg.warps},
                          {"num_stages", cfg.stages},
                          {"M", p.m},
                          {"N", p.n},
                          {"K", p.k},
                          {"OUT_COLS", p.out_cols()},
                          {"alpha", 1.0},
                          {"beta", 0.0},
                          {"dtype", "bf16"},
                          {"out", "bf16"},
                          {"a", (dir / "a").string()},
                          {"b", (dir / "b").string()},
                          {"bias", (dir / "bias").string()},
                          {"d", (dir / "theirs").string()}};
    std::ofstream(dir / "req.json") << own.dump();
    ASSERT_EQ(std::system(("python3 " + script + " " + (dir / "req.json").string()).c_str()), 0) << c.name;
    std::ifstream ours(dir / "ours", std::ios::binary), theirs(dir / "theirs", std::ios::binary);
    std::string x((std::istreambuf_iterator<char>(ours)), {}), y((std::istreambuf_iterator<char>(theirs)), {});
    EXPECT_EQ(x.size(), y.size());
    EXPECT_TRUE(x == y) << c.name << ": gemmforge's launch differs from Triton's";
    ++compared;
  }
  EXPECT_EQ(compared, 2);
}

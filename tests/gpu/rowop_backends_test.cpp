// The Triton and CuTe DSL row ops on the GPU: every default candidate against the float64
// reference on awkward shapes (rows that do not fill a CTA, rows longer than a CTA holds, every
// dtype pair), and NaN / inf like torch. CuTe DSL kernels come compiled (scripts/precompile-cute.sh):
// one missing from the carried cache on a machine that cannot compile is a failure that says so.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <tuple>

#include "cuda/check.hpp"
#include "cuda/memory.hpp"
#include "gemmforge/backend.hpp"
#include "gpu_test_util.hpp"
#include "harness/rowop_bench.hpp"
#include "jit/cute_dsl.hpp"

using namespace gf;

namespace {

// The backend's kernel for candidate c, or a failure naming why it is missing.
std::unique_ptr<RowOpKernel> build(const RowOpBackend& backend, const RowOpSpec& s, const Candidate& c) {
  auto report = backend.compile(s, c, true);
  if (!report.ok) {
    ADD_FAILURE() << backend.name() << " " << c.name << " for " << s.key()
                  << (backend.name() == "cute" && !jit::cute_dsl::compile_unavailable().empty()
                          ? " is not in the carried kernel cache: "
                          : " failed to compile: ")
                  << report.log;
    return nullptr;
  }
  return backend.build(s, c);
}

}  // namespace

class RowOpBackendTest : public ::testing::TestWithParam<std::tuple<const char*, const char*>> {};

TEST_P(RowOpBackendTest, EveryDefaultCandidateVerifies) {
  const auto [name, text] = GetParam();
  auto backend = find_backend<RowOpSpec>(name);
  ASSERT_TRUE(backend);
  if (!backend->unavailable().empty()) GTEST_SKIP() << backend->unavailable();
  const RowOpSpec s = RowOpSpec::parse(text);
  if (std::string why = backend->supports(s); !why.empty()) GTEST_SKIP() << name << " declines " << text << ": " << why;
  const DeviceInfo dev = DeviceInfo::query();
  auto cands = backend->candidates(s, dev, {.level = Search::normal});
  ASSERT_FALSE(cands.empty());
  harness::RowOpBench bench(s, dev, std::random_device{}());
  for (const auto& c : cands) {
    auto kernel = build(*backend, s, c);
    if (!kernel) continue;
    auto m = bench.measure(*kernel, false, {});
    EXPECT_TRUE(m.verified) << name << " " << c.name << " " << s.key() << ": " << m.error;
  }
}

// The shapes scripts/precompile-cute.sh compiles for.
INSTANTIATE_TEST_SUITE_P(
    Shapes, RowOpBackendTest,
    ::testing::Combine(::testing::Values("triton", "cute"),
                       ::testing::Values("softmax:77x1000:f16", "softmax:300x4096:bf16->f32",
                                         "softmax+valid:64x4096:bf16", "softmax:8x262144:bf16",
                                         "softmax+valid:8x65536:bf16", "softmax:1000x24:f32", "rmsnorm:1000x4096:bf16",
                                         "rmsnorm+residual:333x1000:bf16", "rmsnorm+residual:8x262144:f16",
                                         "rmsnorm:3x8:f32", "rmsnorm:130x16384:bf16->f32")));

// Row 0: a NaN -> all NaN. Row 1: one +inf -> all NaN. Row 2: all -inf -> all NaN. Row 3:
// finite, 1/n each (torch.softmax gives the same); for each backend's first candidate.
TEST(RowOpBackendNan, SoftmaxNanAndInfBehaveLikeTorch) {
  for (const char* name : {"triton", "cute"}) {
    auto backend = find_backend<RowOpSpec>(name);
    if (!backend->unavailable().empty()) continue;
    for (const char* text : {"softmax:4x256:f32", "softmax:4x65536:f32"}) {
      const RowOpSpec s = RowOpSpec::parse(text);
      const int64_t n = s.cols;
      std::vector<float> x(size_t(4 * n), 0.5f);
      x[7] = NAN;
      x[size_t(n + 9)] = INFINITY;
      for (int64_t c = 0; c < n; ++c) x[size_t(2 * n + c)] = -INFINITY;
      cuda::DeviceBuffer dx(x.size() * 4), dy(x.size() * 4);
      GF_CUDA_CHECK(cudaMemcpy(dx.get(), x.data(), dx.bytes(), cudaMemcpyHostToDevice));
      RowOpArgs a;
      a.x = dx.get();
      a.y = dy.get();
      auto cands = backend->candidates(s, DeviceInfo::query(), {.level = Search::fast, .top_k = 1});
      ASSERT_EQ(cands.size(), 1u) << name;
      auto kernel = build(*backend, s, cands[0]);
      if (!kernel) continue;
      kernel->launch(a, nullptr);
      GF_CUDA_CHECK(cudaDeviceSynchronize());
      auto y = test::to_host(dy.get(), DType::f32, 4 * n);
      for (int64_t c = 0; c < n; ++c) {
        ASSERT_TRUE(std::isnan(y[size_t(c)])) << name << " " << text << ": NaN row, col " << c;
        ASSERT_TRUE(std::isnan(y[size_t(n + c)])) << name << " " << text << ": +inf row, col " << c;
        ASSERT_TRUE(std::isnan(y[size_t(2 * n + c)])) << name << " " << text << ": all -inf row, col " << c;
        ASSERT_NEAR(y[size_t(3 * n + c)], 1.0 / double(n), 1e-6) << name << " " << text;
      }
    }
  }
}

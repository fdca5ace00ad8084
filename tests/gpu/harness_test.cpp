// The harness on the GPU: compare() finds a planted bad element, a uniform error past the
// tolerance and a NaN, and passes the correctly rounded output; the guard band sees one byte
// written past the end; the flush leaves L2 without the data read before it.
#include <cuda_bf16.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <vector>

#include "cuda/memory.hpp"
#include "harness/copy_bench.hpp"
#include "harness/fill.hpp"
#include "harness/timer.hpp"
#include "harness/verify.hpp"

using namespace gf;

namespace {

constexpr int64_t kCount = 1 << 16;

struct Planted {
  cuda::DeviceBuffer ref{size_t(kCount) * 4}, out{size_t(kCount) * 2};
  std::vector<float> host_ref = std::vector<float>(size_t(kCount));
  Planted() {
    std::mt19937 rng(5);
    std::normal_distribution<float> n(0.0f, 1.0f);
    for (float& x : host_ref) x = n(rng);
    GF_CUDA_CHECK(cudaMemcpy(ref.get(), host_ref.data(), ref.bytes(), cudaMemcpyHostToDevice));
  }
  // The verdict on the reference rounded to bf16, each element passed through `change` first.
  std::string verdict_of(const std::function<float(int64_t, float)>& change) {
    std::vector<__nv_bfloat16> h(static_cast<size_t>(kCount));
    for (int64_t i = 0; i < kCount; ++i) h[size_t(i)] = __float2bfloat16(change(i, host_ref[size_t(i)]));
    GF_CUDA_CHECK(cudaMemcpy(out.get(), h.data(), out.bytes(), cudaMemcpyHostToDevice));
    return harness::verdict(harness::compare(out.get(), DType::bf16, ref.as<float>(), kCount, nullptr), DType::bf16);
  }
};

}  // namespace

TEST(Harness, CompareFailsWhatIsWrongAndPassesWhatIsRounded) {
  Planted p;
  EXPECT_EQ(p.verdict_of([](int64_t, float x) { return x; }), "") << "bf16 rounding of the reference";
  EXPECT_NE(p.verdict_of([](int64_t i, float x) { return i == 777 ? x + 1.0f : x; }), "")
      << "one element off by the reference's rms";
  EXPECT_NE(p.verdict_of([](int64_t, float x) { return x * 1.03f; }), "") << "all off by 3%";
  EXPECT_NE(p.verdict_of([](int64_t i, float x) { return i == kCount - 1 ? NAN : x; }).find("NaN"), std::string::npos);
}

TEST(Harness, GuardBandSeesOneBytePastTheEnd) {
  cuda::DeviceBuffer band(4096);
  harness::fill_guard(band.get(), band.bytes(), nullptr);
  EXPECT_EQ(harness::guard_damage(band.get(), band.bytes(), nullptr), 0);
  unsigned char byte = 0;
  GF_CUDA_CHECK(cudaMemcpy(&byte, static_cast<char*>(band.get()) + 1, 1, cudaMemcpyDeviceToHost));
  GF_CUDA_CHECK(cudaMemset(static_cast<char*>(band.get()) + 1, ~byte & 0xff, 1));
  EXPECT_EQ(harness::guard_damage(band.get(), band.bytes(), nullptr), 1);
}

TEST(Harness, FlushEvictsWhatWasReadBefore) {
  // A read that L2 holds is faster than the same read after the flush. 24 MiB: at 8 MiB the read
  // took 7.2 us either way on an H200 (2026-12-03), its launch and two waves of one load a thread
  // hiding what L2 saves; 24 MiB fits half of an H100's or H200's L2.
  cuda::DeviceBuffer data(24u << 20);
  GF_CUDA_CHECK(cudaMemset(data.get(), 1, data.bytes()));
  int device = 0, l2 = 0;
  GF_CUDA_CHECK(cudaGetDevice(&device));
  GF_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  harness::Timer timer(l2);
  cuda::Stream s;
  auto read = [&](int) { harness::read_through(data.get(), data.bytes(), s.get()); };
  harness::TimingOptions warm{.warmup_ms = 10, .budget_ms = 20, .flush_l2 = false};
  harness::TimingOptions cold{.warmup_ms = 10, .budget_ms = 20, .flush_l2 = true};
  const double hot_us = timer.time(read, 1, s.get(), warm).median_us;
  const double cold_us = timer.time(read, 1, s.get(), cold).median_us;
  EXPECT_GT(cold_us, 1.15 * hot_us) << "hot " << hot_us << " us, after the flush " << cold_us << " us";
}

TEST(Harness, CopyOfTheSameBytesIsTimedInBothModes) {
  // bench's ceiling for a decode GEMM: a copy moving its bytes, one launch and back to back.
  const DeviceInfo device = DeviceInfo::query();
  const size_t bytes = size_t(64) << 20;
  const harness::CopyTiming t = harness::copy_timing(device, bytes);
  ASSERT_TRUE(std::isfinite(t.us) && std::isfinite(t.graph_us));
  EXPECT_GT(t.us, 0);
  EXPECT_GT(t.graph_us, 0);
  // Bytes read and written over the time: a copy on this memory, not a clock that stopped.
  EXPECT_LT(double(bytes) / (t.graph_us * 1e-6), 10e12);
}

// Row ops and elementwise ops on the GPU: every config of many row lengths against the float64
// reference (itself checked against the CPU), NaN and inf like torch, misaligned pointers.
#include "gemmforge/ops.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <thread>

#include "backends/rowop/native/kernel.hpp"
#include "gpu_test_util.hpp"
#include "harness/fill.hpp"
#include "harness/rowop_bench.hpp"
#include "harness/rowop_reference.hpp"
#include "harness/verify.hpp"

using namespace gf;

namespace {

// The reference in float64 on the host, from host copies of the inputs.
std::vector<double> cpu_row_op(const RowOpSpec& s, const std::vector<double>& x, const std::vector<double>& w,
                               const std::vector<double>& b, const std::vector<int>& valid) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < s.rows; ++r) {
    const double* xr = x.data() + r * s.cols;
    double* yr = y.data() + r * s.cols;
    if (s.kind == RowOpKind::softmax) {
      int64_t n = s.valid_len ? std::clamp<int64_t>(valid[size_t(r)], 0, s.cols) : s.cols;
      double mx = -INFINITY, sum = 0;
      for (int64_t c = 0; c < n; ++c) mx = std::max(mx, xr[c]);
      for (int64_t c = 0; c < n; ++c) sum += std::exp(xr[c] - mx);
      for (int64_t c = 0; c < s.cols; ++c) yr[c] = c < n && mx != -INFINITY ? std::exp(xr[c] - mx) / sum : 0.0;
      continue;
    }
    double mean = 0, ss = 0;
    if (s.kind == RowOpKind::layernorm) {
      for (int64_t c = 0; c < s.cols; ++c) mean += xr[c];
      mean /= double(s.cols);
    }
    for (int64_t c = 0; c < s.cols; ++c) ss += (xr[c] - mean) * (xr[c] - mean);
    double rstd = 1 / std::sqrt(ss / double(s.cols) + 1e-5);
    for (int64_t c = 0; c < s.cols; ++c)
      yr[c] = (xr[c] - mean) * rstd * w[size_t(c)] + (s.kind == RowOpKind::layernorm ? b[size_t(c)] : 0.0);
  }
  return y;
}

// x as bf16 (the top halves: exact for values that bf16_exact left alone).
std::vector<uint16_t> to_bf16(const std::vector<float>& x) {
  std::vector<uint16_t> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = uint16_t(std::bit_cast<uint32_t>(x[i]) >> 16);
  return out;
}
float bf16_exact(float v) { return std::bit_cast<float>(std::bit_cast<uint32_t>(v) & 0xffff0000u); }

// x * scale, exactly (softmax's t in float64).
std::vector<double> scaled(const std::vector<float>& x, float scale) {
  std::vector<double> t(x.size());
  for (size_t i = 0; i < x.size(); ++i) t[i] = double(x[i]) * scale;
  return t;
}

}  // namespace

class RowReferenceTest : public ::testing::TestWithParam<const char*> {};

TEST_P(RowReferenceTest, MatchesCpu) {
  RowOpSpec s = RowOpSpec::parse(GetParam());
  harness::RowOpBench bench(s, DeviceInfo::query(), std::random_device{}());
  RowOpArgs a = bench.args(0);
  auto x = test::to_host(a.x, s.in, s.rows * s.cols);
  std::vector<double> w, b;
  if (a.weight) w = test::to_host(a.weight, s.in, s.cols);
  if (a.bias) b = test::to_host(a.bias, s.in, s.cols);
  std::vector<int> valid(size_t(s.rows));
  if (s.valid_len) GF_CUDA_CHECK(cudaMemcpy(valid.data(), a.valid_len, valid.size() * 4, cudaMemcpyDeviceToHost));
  auto expect = cpu_row_op(s, x, w, b, valid);
  auto got = test::to_host(bench.reference(), DType::f32, s.rows * s.cols);
  EXPECT_LT(test::rel_err(got, expect), 1e-6) << s.key();
}

INSTANTIATE_TEST_SUITE_P(Shapes, RowReferenceTest,
                         ::testing::Values("softmax:5x7:bf16", "softmax+valid:9x100:f16", "rmsnorm:4x1000:bf16",
                                           "layernorm:3x4096:f32", "softmax:2x1:bf16"));

class RowOpTest : public ::testing::TestWithParam<const char*> {};

TEST_P(RowOpTest, EveryConfigVerifies) {
  RowOpSpec s = RowOpSpec::parse(GetParam());
  DeviceInfo dev = DeviceInfo::query();
  auto configs = rowops::row_configs(s);
  ASSERT_FALSE(configs.empty()) << s.key();
  if (configs.size() > 16) configs.resize(16);
  harness::RowOpBench bench(s, dev, std::random_device{}());
  for (const auto& c : configs) {
    auto compiled = rowops::compile_row_kernel(s, c, true);
    ASSERT_TRUE(compiled.report.ok) << c.name(s) << "\n" << compiled.report.log;
    rowops::RowKernel kernel(s, c, compiled.cubin);
    auto m = bench.measure(kernel, false, {});
    EXPECT_TRUE(m.verified) << c.name(s) << ": " << m.error;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, RowOpTest,
    ::testing::Values("softmax:1000x1:bf16", "softmax:77x7:f16", "softmax:300x1000:bf16", "softmax+valid:64x4096:bf16",
                      "softmax:64x65536:bf16->f32", "softmax:8x262144:bf16", "softmax+valid:4x524288:bf16",
                      "rmsnorm:1000x4096:bf16", "rmsnorm+residual:333x1000:bf16", "rmsnorm+residual:8x262144:f16",
                      "rmsnorm:2x524288:bf16", "layernorm:513x768:f32", "layernorm:16x65536:bf16",
                      "layernorm:3x524288:bf16", "softmax:262144x1024:bf16", "rmsnorm:1024x262144:bf16",
                      "rmsnorm+residual:8x65536:bf16", "softmax+valid:8x65536:bf16",
                      // More rows than resident CTAs: persistent bulk kernels go round their rings.
                      "softmax+valid:700x32768:bf16", "rmsnorm+residual:1000x16384:bf16", "layernorm:3000x8192:f16",
                      // Rows of one and a half bulk copies (16 KiB): a short last copy.
                      "rmsnorm+residual:1500x12288:bf16", "softmax:1500x12288:bf16"));

// Register-resident rows fed by bulk copies (persistent CTAs, the stage refilled once the row is
// in registers): every op, with and without clusters, more rows than resident CTAs. The two large
// shapes caught stages refilled before the reads from them had landed.
TEST(RowOp, RegisterRowsFromBulkCopiesVerify) {
  DeviceInfo dev = DeviceInfo::query();
  for (const char* text : {"softmax+valid:700x32768:bf16", "rmsnorm+residual:1000x16384:bf16",
                           "layernorm:3000x8192:f16", "softmax:64x65536:bf16->f32", "rmsnorm:1024x262144:bf16",
                           "softmax:16384x16384:bf16", "rmsnorm:4096x65536:bf16"}) {
    RowOpSpec s = RowOpSpec::parse(text);
    harness::RowOpBench bench(s, dev, std::random_device{}());
    int tried = 0;
    for (const auto& c : rowops::row_configs(s)) {
      if (!c.bulk || c.stream || tried == 12) continue;
      ++tried;
      auto compiled = rowops::compile_row_kernel(s, c, true);
      ASSERT_TRUE(compiled.report.ok) << c.name(s) << "\n" << compiled.report.log;
      rowops::RowKernel kernel(s, c, compiled.cubin);
      auto m = bench.measure(kernel, false, {});
      EXPECT_TRUE(m.verified) << c.name(s) << ": " << m.error;
    }
    EXPECT_GT(tried, 0) << text;
  }
}

TEST(RowOp, NanAndInfBehaveLikeTorch) {
  // Row 0: a NaN -> all NaN. Row 1: one +inf -> all NaN (inf - inf in the sum). Row 2: all -inf ->
  // all NaN. Row 3: finite. torch.softmax gives the same. Over the register-resident kernel
  // (255 columns: threads that hold the NaN alone) and the streaming one; bf16 in for the
  // register-resident kernel's max over bf16 pairs.
  for (const char* text : {"softmax:4x256:f32", "softmax:4x255:f32", "softmax:4x65536:f32", "softmax:4x256:bf16->f32",
                           "softmax:4x65536:bf16->f32"}) {
    RowOpSpec s = RowOpSpec::parse(text);
    const int64_t n = s.cols;
    std::vector<float> x(size_t(4 * n), 0.5f);
    x[7] = NAN;
    x[size_t(n + 9)] = INFINITY;
    for (int64_t c = 0; c < n; ++c) x[size_t(2 * n + c)] = -INFINITY;
    // 0.5, NaN and the infinities are bf16-exact.
    const std::vector<uint16_t> x16 = to_bf16(x);
    const void* host = s.in == DType::f32 ? static_cast<const void*>(x.data()) : x16.data();
    cuda::DeviceBuffer dx(x.size() * size_t(dtype_bytes(s.in))), dy(x.size() * 4);
    GF_CUDA_CHECK(cudaMemcpy(dx.get(), host, dx.bytes(), cudaMemcpyHostToDevice));
    RowOpArgs a;
    a.x = dx.get();
    a.y = dy.get();
    std::vector<rowops::RowConfig> configs;
    for (const auto& c : rowops::row_configs(s))
      if (configs.empty() || (c.stream && !configs.back().stream)) configs.push_back(c);
    for (const auto& c : configs) {
      auto compiled = rowops::compile_row_kernel(s, c, true);
      ASSERT_TRUE(compiled.report.ok) << c.name(s) << "\n" << compiled.report.log;
      rowops::RowKernel kernel(s, c, compiled.cubin);
      kernel.launch(a, nullptr);
      GF_CUDA_CHECK(cudaDeviceSynchronize());
      auto y = test::to_host(dy.get(), DType::f32, 4 * n);
      for (int64_t c2 = 0; c2 < n; ++c2) {
        ASSERT_TRUE(std::isnan(y[size_t(c2)])) << c.name(s) << ": NaN row, col " << c2;
        ASSERT_TRUE(std::isnan(y[size_t(n + c2)])) << c.name(s) << ": +inf row, col " << c2;
        ASSERT_TRUE(std::isnan(y[size_t(2 * n + c2)])) << c.name(s) << ": all -inf row, col " << c2;
        ASSERT_NEAR(y[size_t(3 * n + c2)], 1.0 / double(n), 1e-6) << c.name(s);
      }
    }
  }

  OpsRuntime rt;
  cuda::DeviceBuffer dx(2 * 128 * 4), dy(2 * 128 * 4);
  std::vector<float> x(2 * 128, 0.5f);
  x[7] = NAN;
  GF_CUDA_CHECK(cudaMemcpy(dx.get(), x.data(), dx.bytes(), cudaMemcpyHostToDevice));
  RowOpArgs a;
  a.x = dx.get();
  a.y = dy.get();
  RowOpSpec n = RowOpSpec::parse("rmsnorm:2x128:f32");
  std::vector<float> w(128, 1.0f);
  cuda::DeviceBuffer dw(w.size() * 4);
  GF_CUDA_CHECK(cudaMemcpy(dw.get(), w.data(), dw.bytes(), cudaMemcpyHostToDevice));
  a.weight = dw.get();
  rt.run(n, a);
  GF_CUDA_CHECK(cudaDeviceSynchronize());
  auto y = test::to_host(dy.get(), DType::f32, 2 * 128);
  for (int c = 0; c < 128; ++c) EXPECT_TRUE(std::isnan(y[size_t(c)])) << "a NaN in the row poisons the RMS";
}

// The first config of each kind in the ranking: registers, two passes (the second from L2), two
// passes over bulk-copied stages, registers fed by bulk-copied stages.
static std::vector<rowops::RowConfig> one_of_each_kind(const RowOpSpec& s) {
  std::vector<rowops::RowConfig> out;
  bool seen[4] = {};
  for (const auto& c : rowops::row_configs(s)) {
    const int kind = c.bulk ? (c.stream ? 2 : 3) : c.stream ? 1 : 0;
    if (!seen[kind]) out.push_back(c);
    seen[kind] = true;
  }
  EXPECT_EQ(out.size(), 4u) << s.key() << ": not every kind of kernel is in the space";
  return out;
}

// Runs each kind of kernel on x (on the host; f32 or, for a bf16 spec, bf16-exact values) and
// compares y (f32) with want.
static void expect_each_kind(const RowOpSpec& s, const std::vector<float>& x, RowOpArgs a,
                             const std::vector<double>& want, double tolerance) {
  const int64_t n = s.rows * s.cols;
  const std::vector<uint16_t> x16 = to_bf16(x);
  const void* host = s.in == DType::bf16 ? static_cast<const void*>(x16.data()) : x.data();
  cuda::DeviceBuffer dx(x.size() * size_t(dtype_bytes(s.in))), dy(x.size() * 4);
  GF_CUDA_CHECK(cudaMemcpy(dx.get(), host, dx.bytes(), cudaMemcpyHostToDevice));
  a.x = dx.get();
  a.y = dy.get();
  for (const auto& c : one_of_each_kind(s)) {
    auto compiled = rowops::compile_row_kernel(s, c, true);
    ASSERT_TRUE(compiled.report.ok) << c.name(s) << "\n" << compiled.report.log;
    rowops::RowKernel kernel(s, c, compiled.cubin);
    kernel.launch(a, nullptr);
    GF_CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_LT(test::rel_err(test::to_host(dy.get(), DType::f32, n), want), tolerance) << c.name(s);
  }
}

// Softmax of x * scale on each kind of kernel against float64 over t taken exactly.
static void expect_softmax_each_kind(const RowOpSpec& s, const std::vector<float>& x, float scale, double tolerance) {
  RowOpArgs a;
  a.scale = scale;
  SCOPED_TRACE(fmt::format("{} scale {}", s.key(), scale));
  expect_each_kind(s, x, a, cpu_row_op(s, scaled(x, scale), {}, {}, {}), tolerance);
}

TEST(RowOp, LayerNormOfALargeMeanKeepsItsVariance) {
  // x = 1000 + u, u in [-1, 1): E[x^2] - mean^2 in fp32 would lose the variance (~1/3) to
  // cancellation; every kind of kernel computes it centred.
  RowOpSpec s = RowOpSpec::parse("layernorm:48x65536:f32");
  std::vector<float> x(static_cast<size_t>(s.rows * s.cols)), w(static_cast<size_t>(s.cols), 1.0f), b(w.size(), 0.0f);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (auto& v : x) v = 1000.0f + u(rng);
  cuda::DeviceBuffer dw(w.size() * 4), db(b.size() * 4);
  GF_CUDA_CHECK(cudaMemcpy(dw.get(), w.data(), dw.bytes(), cudaMemcpyHostToDevice));
  GF_CUDA_CHECK(cudaMemcpy(db.get(), b.data(), db.bytes(), cudaMemcpyHostToDevice));
  RowOpArgs a;
  a.weight = dw.get();
  a.bias = db.get();
  std::vector<double> want(x.size());
  for (int64_t r = 0; r < s.rows; ++r) {
    const float* row = &x[size_t(r * s.cols)];
    double mean = 0, ss = 0;
    for (int64_t c = 0; c < s.cols; ++c) mean += row[c];
    mean /= double(s.cols);
    for (int64_t c = 0; c < s.cols; ++c) ss += std::pow(row[c] - mean, 2);
    const double rstd = 1 / std::sqrt(ss / double(s.cols) + 1e-5);
    for (int64_t c = 0; c < s.cols; ++c) want[size_t(r * s.cols + c)] = (row[c] - mean) * rstd;
  }
  expect_each_kind(s, x, a, want, 1e-3);
}

TEST(RowOp, SoftmaxOfLargeLogitsKeepsItsAccuracy) {
  // t = x * scale ~ 10000 + 3u: exponentials must be taken of x * scale - max exactly, not of t
  // or t * log2(e) rounded first (~3e-4 relative error at this magnitude; fp32 out shows it).
  // The reference takes t exactly; a scale of 0.7 rounds every product in fp32.
  RowOpSpec s = RowOpSpec::parse("softmax:48x65536:f32");
  for (float scale : {1.0f, 0.7f}) {
    std::vector<float> x(static_cast<size_t>(s.rows * s.cols));
    std::mt19937 rng(6);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& v : x) v = (10000.0f + 3.0f * u(rng)) / scale;
    expect_softmax_each_kind(s, x, scale, 2e-5);
  }
}

TEST(RowOp, SoftmaxOfHugeFiniteLogitsStaysFinite) {
  // Masks written as a huge negative number (-1e10, the lowest float), also under a scale: the
  // exact forms of x * scale - m must give way to t rounded first before their own roundings
  // (half an ulp of m) overflow e^(). A review found NaN rows here.
  for (const char* text : {"softmax:6x65536:f32", "softmax:6x65536:bf16->f32"}) {
    RowOpSpec s = RowOpSpec::parse(text);
    const int64_t n = s.cols;
    const float lowest = std::numeric_limits<float>::lowest();
    std::vector<float> x(size_t(6 * n));
    std::mt19937 rng(8);
    std::uniform_real_distribution<float> u(-4.0f, 4.0f);
    for (int64_t c = 0; c < n; ++c) {
      x[size_t(c)] = -1e10f;
      x[size_t(n + c)] = lowest;
      x[size_t(2 * n + c)] = c < 20 ? u(rng) : -1e10f;
      x[size_t(3 * n + c)] = c < 9 ? u(rng) : lowest;
      x[size_t(4 * n + c)] = u(rng);
      x[size_t(5 * n + c)] = c == 5 ? 2e9f : u(rng);
    }
    for (auto& v : x) v = bf16_exact(v);
    for (float scale : {1.0f, 0.125f}) {
      expect_softmax_each_kind(s, x, scale, 1e-5);
    }
  }
}

TEST(RowOp, SoftmaxTakesAScaleOfEitherSign) {
  // A positive scale folds into the exponentials (the max of x * scale is scale * max x); a zero
  // or negative one is applied to x first. Each on every kind of kernel, bf16 in for the max over
  // bf16 pairs.
  for (const char* text : {"softmax:37x65536:f32", "softmax:37x65536:bf16->f32"}) {
    RowOpSpec s = RowOpSpec::parse(text);
    std::vector<float> x(static_cast<size_t>(s.rows * s.cols));
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-8.0f, 8.0f);
    for (auto& v : x) v = bf16_exact(u(rng));
    for (float scale : {0.3f, -0.5f, 0.0f}) {
      expect_softmax_each_kind(s, x, scale, 1e-5);
    }
  }
}

TEST(RowOp, MisalignedPointersTakeTheScalarPath) {
  RowOpSpec s = RowOpSpec::parse("rmsnorm:64x1024:bf16");
  harness::RowOpBench bench(s, DeviceInfo::query(), 3);
  RowOpArgs a = bench.args(0);
  // The same input one element past a 16-byte boundary, and the output likewise: the runtime
  // must take the unvectorized path and agree with the aligned run.
  cuda::DeviceBuffer x(size_t(64 * 1024 + 8) * 2), y(size_t(64 * 1024 + 8) * 2), y2(size_t(64 * 1024) * 2);
  GF_CUDA_CHECK(cudaMemcpy(static_cast<char*>(x.get()) + 2, a.x, 64 * 1024 * 2, cudaMemcpyDeviceToDevice));
  OpsRuntime rt;
  RowOpArgs shifted = a;
  shifted.x = static_cast<char*>(x.get()) + 2;
  shifted.y = static_cast<char*>(y.get()) + 2;
  rt.run(s, shifted);
  RowOpArgs aligned = a;
  aligned.y = y2.get();
  rt.run(s, aligned);
  GF_CUDA_CHECK(cudaDeviceSynchronize());
  auto got = test::to_host(shifted.y, DType::bf16, 64 * 1024);
  auto want = test::to_host(y2.get(), DType::bf16, 64 * 1024);
  EXPECT_LT(test::rel_err(got, want), 1e-2);
}

TEST(Elementwise, SwigluAndGeluMatchCpu) {
  for (int64_t count : {int64_t(1), int64_t(1001), int64_t(1) << 20}) {
    for (DType t : {DType::bf16, DType::f32}) {
      cuda::DeviceBuffer a(size_t(count) * 4), b(size_t(count) * 4), o(size_t(count) * 4);
      harness::fill_uniform(a.get(), t, count, 1, -4, 4, nullptr);
      harness::fill_uniform(b.get(), t, count, 2, -4, 4, nullptr);
      auto ha = test::to_host(a.get(), t, count), hb = test::to_host(b.get(), t, count);
      ops::swiglu(a.get(), b.get(), o.get(), count, t);
      auto got = test::to_host(o.get(), t, count);
      std::vector<double> want(static_cast<size_t>(count));
      for (size_t i = 0; i < want.size(); ++i) want[i] = ha[i] / (1 + std::exp(-ha[i])) * hb[i];
      EXPECT_LT(test::rel_err(got, want), 1e-2) << "swiglu " << count;
      for (bool tanh_approx : {false, true}) {
        ops::gelu(a.get(), o.get(), count, t, tanh_approx);
        got = test::to_host(o.get(), t, count);
        for (size_t i = 0; i < want.size(); ++i)
          want[i] = test::activate(ha[i], tanh_approx ? Activation::gelu_tanh : Activation::gelu);
        EXPECT_LT(test::rel_err(got, want), 1e-2) << "gelu " << count;
      }
    }
  }
  EXPECT_THROW(ops::gelu(nullptr, nullptr, 16, DType::bf16, false), Error);
}

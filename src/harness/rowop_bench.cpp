#include "harness/rowop_bench.hpp"

#include <algorithm>
#include <atomic>
#include <random>
#include <thread>

#include "core/ranking.hpp"
#include "harness/rowop_reference.hpp"
#include "harness/verify.hpp"

namespace gf::ops {

RowOpBench::RowOpBench(const RowOpSpec& s, const DeviceInfo& device, uint64_t seed)
    : spec_(s), timer_(device.l2_bytes) {
  GF_CHECK(s.invalid_reason().empty(), "invalid op {}: {}", s.key(), s.invalid_reason());
  const int64_t n = s.rows * s.cols;
  const size_t in_bytes = size_t(n) * size_t(dtype_bytes(s.in));
  const double set_bytes = double(in_bytes) * (s.residual ? 2 : 1);
  int count = int(std::clamp(std::ceil(3.0 * double(device.l2_bytes) / set_bytes), 1.0, 8.0));
  for (int i = 0; i < count; ++i) {
    InputSet set;
    set.x = cuda::DeviceBuffer(in_bytes);
    // Softmax sees a wider range, so exp() is exercised; norms get centred data.
    const float range = s.kind == RowOpKind::softmax ? 4.0f : 1.0f;
    tune::fill_uniform(set.x.get(), s.in, n, seed * 7919 + uint64_t(i) * 8, -range, range, stream());
    if (s.residual) {
      set.residual = cuda::DeviceBuffer(in_bytes);
      tune::fill_uniform(set.residual.get(), s.in, n, seed * 7919 + uint64_t(i) * 8 + 1, -1.0f, 1.0f, stream());
    }
    sets_.push_back(std::move(set));
  }
  y_ = cuda::DeviceBuffer(size_t(n) * size_t(dtype_bytes(s.out)));
  if (s.residual) residual_out_ = cuda::DeviceBuffer(in_bytes);
  if (s.kind != RowOpKind::softmax) {
    weight_ = cuda::DeviceBuffer(size_t(s.cols) * size_t(dtype_bytes(s.in)));
    tune::fill_uniform(weight_.get(), s.in, s.cols, seed + 11, 0.5f, 1.5f, stream());
  }
  if (s.kind == RowOpKind::layernorm) {
    bias_ = cuda::DeviceBuffer(size_t(s.cols) * size_t(dtype_bytes(s.in)));
    tune::fill_uniform(bias_.get(), s.in, s.cols, seed + 13, -0.5f, 0.5f, stream());
  }
  if (s.valid_len) {
    std::mt19937_64 rng(seed);
    std::vector<int> lens(size_t(s.rows));
    for (auto& l : lens) l = int(rng() % uint64_t(s.cols + 1));  // 0 .. cols
    if (s.rows > 1) lens[0] = 0, lens[1] = int(s.cols);
    valid_len_ = cuda::DeviceBuffer(lens.size() * sizeof(int));
    GF_CUDA_CHECK(cudaMemcpyAsync(valid_len_.get(), lens.data(), valid_len_.bytes(), cudaMemcpyHostToDevice, stream()));
  }
  ref_ = cuda::DeviceBuffer(size_t(n) * 4);
  if (s.residual) ref_residual_ = cuda::DeviceBuffer(size_t(n) * 4);
  row_reference(s, args(0), ref_.as<float>(), ref_residual_.as<float>(), stream());
  stream_.sync();
}

RowOpArgs RowOpBench::args(int set) const {
  const InputSet& s = sets_[size_t(set) % sets_.size()];
  RowOpArgs a;
  a.x = s.x.get();
  a.residual = s.residual.get();
  a.y = y_.get();
  a.residual_out = residual_out_.get();
  a.weight = weight_.get();
  a.bias = bias_.get();
  a.valid_len = valid_len_.as<int>();
  a.scale = 1.0f;
  a.eps = 1e-5f;
  return a;
}

RowMeasurement RowOpBench::measure(const RowKernel& kernel, bool time, const tune::TimingOptions& timing) {
  RowMeasurement m;
  m.config = kernel.config();
  m.name = kernel.config().name(spec_);
  m.ctas = kernel.ctas();
  const int64_t n = spec_.rows * spec_.cols;
  tune::fill_nan(y_.get(), spec_.out, n, stream());
  if (spec_.residual) tune::fill_nan(residual_out_.get(), spec_.in, n, stream());
  kernel.launch(args(0), stream());
  GF_CUDA_CHECK(cudaGetLastError());
  stream_.sync();
  tune::Comparison c = tune::compare(y_.get(), spec_.out, ref_.as<float>(), n, stream());
  m.rel_err = c.rel_err();
  m.error = tune::verdict(c, spec_.out);
  if (m.error.empty() && spec_.residual) {
    tune::Comparison r = tune::compare(residual_out_.get(), spec_.in, ref_residual_.as<float>(), n, stream());
    if (std::string why = tune::verdict(r, spec_.in); !why.empty()) m.error = "residual_out: " + why;
  }
  m.verified = m.error.empty();
  if (!m.verified || !time) return m;
  tune::Timing t =
      timer_.time([&](int set) { kernel.launch(args(set), stream()); }, int(sets_.size()), stream(), timing);
  m.us = t.median_us;
  m.tbps = spec_.bytes() / (m.us * 1e-6) / 1e12;
  return m;
}

std::vector<RowMeasurement> tune_row_op(const RowOpSpec& spec, const DeviceInfo& device, int max_configs,
                                        const std::function<void(int, int)>& progress, const std::string& only) {
  auto configs = row_configs(spec);
  GF_CHECK(!configs.empty(), "no row-op configuration fits {}", spec.key());
  std::erase_if(configs, [&](const RowConfig& c) { return !name_matches(c.name(spec), only); });
  if (configs.empty()) return {};
  configs = first_configs(std::move(configs), max_configs);
  std::vector<jit::Compiled> compiled(configs.size());
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < std::max(1u, std::thread::hardware_concurrency()); ++t)
    threads.emplace_back([&] {
      for (size_t i = next++; i < configs.size(); i = next++) compiled[i] = compile_row_kernel(spec, configs[i], true);
    });
  for (auto& t : threads) t.join();

  RowOpBench bench(spec, device, std::random_device{}());
  std::vector<RowMeasurement> out;
  for (size_t i = 0; i < configs.size(); ++i) {
    RowMeasurement m;
    m.config = configs[i];
    m.name = configs[i].name(spec);
    m.compile_seconds = compiled[i].report.seconds;
    if (!compiled[i].report.ok) {
      m.error = "compile failed: " + compiled[i].report.log.substr(0, 1000);
    } else {
      try {
        RowKernel kernel(spec, configs[i], compiled[i].cubin);
        m = bench.measure(kernel, true, {});
        m.compile_seconds = compiled[i].report.seconds;
      } catch (const Error& e) {
        m.error = e.what();
      }
    }
    out.push_back(std::move(m));
    if (progress) progress(int(i + 1), int(configs.size()));
  }
  std::stable_sort(out.begin(), out.end(), [](const RowMeasurement& a, const RowMeasurement& b) {
    if (a.verified != b.verified) return a.verified;
    return a.us < b.us;
  });
  return out;
}

double copy_bandwidth_tbps(const DeviceInfo& device) {
  const size_t bytes = size_t(1) << 31;
  cuda::DeviceBuffer src(bytes), dst(bytes);
  cuda::Stream stream;
  GF_CUDA_CHECK(cudaMemsetAsync(src.get(), 1, bytes, stream.get()));
  tune::Timer timer(device.l2_bytes);
  tune::Timing t = timer.time(
      [&](int) { GF_CUDA_CHECK(cudaMemcpyAsync(dst.get(), src.get(), bytes, cudaMemcpyDeviceToDevice, stream.get())); },
      1, stream.get(), {.warmup = 2, .min_reps = 10, .max_reps = 20, .budget_ms = 50});
  return 2.0 * double(bytes) / (t.median_us * 1e-6) / 1e12;
}

}  // namespace gf::ops

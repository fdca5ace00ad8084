#include "harness/rowop_bench.hpp"

#include <random>

#include "harness/fill.hpp"
#include "harness/rowop_reference.hpp"
#include "harness/verify.hpp"

namespace gf::harness {

RowOpBench::RowOpBench(const RowOpSpec& s, const DeviceInfo& device, uint64_t seed) : Bench(device.l2_bytes), spec_(s) {
  GF_CHECK(s.invalid_reason().empty(), "invalid op {}: {}", s.key(), s.invalid_reason());
  const int64_t n = s.rows * s.cols;
  const size_t in_bytes = size_t(n) * size_t(dtype_bytes(s.in));
  const double set_bytes = double(in_bytes) * (s.residual ? 2 : 1);
  const int count = rotating_sets(set_bytes, device, 8);
  for (int i = 0; i < count; ++i) {
    InputSet set;
    set.x = cuda::DeviceBuffer(in_bytes);
    // Softmax sees a wider range, so exp() is exercised; norms get centred data.
    const float range = s.kind == RowOpKind::softmax ? 4.0f : 1.0f;
    fill_uniform(set.x.get(), s.in, n, seed * 7919 + uint64_t(i) * 8, -range, range, stream());
    if (s.residual) {
      set.residual = cuda::DeviceBuffer(in_bytes);
      fill_uniform(set.residual.get(), s.in, n, seed * 7919 + uint64_t(i) * 8 + 1, -1.0f, 1.0f, stream());
    }
    sets_.push_back(std::move(set));
  }
  y_ = cuda::DeviceBuffer(size_t(n) * size_t(dtype_bytes(s.out)) + kGuardBytes);
  if (s.residual) residual_out_ = cuda::DeviceBuffer(in_bytes + kGuardBytes);
  if (s.kind != RowOpKind::softmax) {
    weight_ = cuda::DeviceBuffer(size_t(s.cols) * size_t(dtype_bytes(s.in)));
    fill_uniform(weight_.get(), s.in, s.cols, seed + 11, 0.5f, 1.5f, stream());
  }
  if (s.kind == RowOpKind::layernorm) {
    bias_ = cuda::DeviceBuffer(size_t(s.cols) * size_t(dtype_bytes(s.in)));
    fill_uniform(bias_.get(), s.in, s.cols, seed + 13, -0.5f, 0.5f, stream());
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

Trial RowOpBench::trial(const Candidate& candidate) {
  auto backend = find_backend<RowOpSpec>(candidate.backend);
  GF_CHECK(backend, "unknown row-op backend '{}'", candidate.backend);
  std::shared_ptr<RowOpKernel> kernel = backend->build(spec_, candidate);
  Trial t = bind(*kernel);
  t.owned = std::move(kernel);
  return t;
}

Trial RowOpBench::bind(RowOpKernel& kernel) {
  const int64_t n = spec_.rows * spec_.cols;
  const size_t y_bytes = size_t(n) * size_t(dtype_bytes(spec_.out)),
               sum_bytes = size_t(n) * size_t(dtype_bytes(spec_.in));
  u_char* y_guard = static_cast<u_char*>(y_.get()) + y_bytes;
  u_char* sum_guard = static_cast<u_char*>(residual_out_.get()) + sum_bytes;
  Trial t;
  t.poison = [=, this] {
    fill_nan(y_.get(), spec_.out, n, stream());
    fill_guard(y_guard, kGuardBytes, stream());
    if (spec_.residual) {
      fill_nan(residual_out_.get(), spec_.in, n, stream());
      fill_guard(sum_guard, kGuardBytes, stream());
    }
  };
  t.launch = [this, &kernel](int set) { kernel.launch(args(set), stream()); };
  t.verify = [=, this] {
    const Comparison c = compare(y_.get(), spec_.out, ref_.as<float>(), n, stream());
    Verdict v{verdict(c, spec_.out), c.rel_err()};
    if (v.error.empty() && spec_.residual) {
      const Comparison r = compare(residual_out_.get(), spec_.in, ref_residual_.as<float>(), n, stream());
      if (std::string why = verdict(r, spec_.in); !why.empty()) v.error = "residual_out: " + why;
    }
    if (const int64_t damaged = guard_damage(y_guard, kGuardBytes, stream()); v.error.empty() && damaged > 0)
      v.error = fmt::format("wrote {} bytes past the end of y", damaged);
    if (spec_.residual && v.error.empty())
      if (const int64_t damaged = guard_damage(sum_guard, kGuardBytes, stream()); damaged > 0)
        v.error = fmt::format("wrote {} bytes past the end of residual_out", damaged);
    return v;
  };
  return t;
}

}  // namespace gf::harness

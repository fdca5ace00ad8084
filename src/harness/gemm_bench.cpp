#include "harness/gemm_bench.hpp"

#include "harness/fill.hpp"
#include "harness/reference.hpp"
#include "harness/verify.hpp"

namespace gf::harness {
namespace {

constexpr size_t kInitialWorkspace = 64u << 20;  // grows for a kernel that needs more

int64_t elems_a(const GemmProblem& p) { return p.batch * p.m * p.k; }
int64_t elems_b(const GemmProblem& p) { return p.batch * p.n * p.k; }
int64_t elems_d(const GemmProblem& p) { return p.batch * p.m * p.out_cols(); }

}  // namespace

GemmBench::GemmBench(const GemmProblem& p, const DeviceInfo& device, uint64_t seed)
    : Bench(device.l2_bytes), problem_(p) {
  p.validate();
  const Epilogue& e = p.epilogue;
  const int in_a = dtype_bytes(p.a), in_b = dtype_bytes(p.b), epi = dtype_bytes(p.epilogue_dtype());
  const int64_t bias_len = e.bias == BiasKind::row ? p.m : p.n;
  double set_bytes =
      double(elems_a(p)) * in_a + double(elems_b(p)) * in_b + (e.has_c() ? double(elems_d(p)) * epi : 0.0);
  const int count = rotating_sets(set_bytes, device, 16);
  for (int s = 0; s < count; ++s) {
    InputSet set;
    uint64_t sd = seed * 1000003 + uint64_t(s) * 16;
    set.a = cuda::DeviceBuffer(size_t(elems_a(p)) * in_a);
    set.b = cuda::DeviceBuffer(size_t(elems_b(p)) * in_b);
    fill_uniform(set.a.get(), p.a, elems_a(p), sd + 1, -1.0f, 1.0f, stream());
    fill_uniform(set.b.get(), p.b, elems_b(p), sd + 2, -1.0f, 1.0f, stream());
    if (e.has_c()) {
      set.c = cuda::DeviceBuffer(size_t(elems_d(p)) * epi);
      fill_uniform(set.c.get(), p.epilogue_dtype(), elems_d(p), sd + 3, -1.0f, 1.0f, stream());
    }
    if (e.bias != BiasKind::none) {
      set.bias = cuda::DeviceBuffer(size_t(bias_len) * epi);
      fill_uniform(set.bias.get(), p.epilogue_dtype(), bias_len, sd + 4, -1.0f, 1.0f, stream());
    }
    if (e.scale != ScaleKind::none) {
      const int64_t na = p.scale_a_count(), nb = p.scale_b_count();
      set.scale_a = cuda::DeviceBuffer(size_t(na) * 4);
      set.scale_b = cuda::DeviceBuffer(size_t(nb) * 4);
      fill_uniform(set.scale_a.get(), DType::f32, na, sd + 5, 0.5f, 2.0f, stream());
      fill_uniform(set.scale_b.get(), DType::f32, nb, sd + 6, 0.5f, 2.0f, stream());
    }
    sets_.push_back(std::move(set));
  }
  d_ = cuda::DeviceBuffer(d_bytes() + kGuardBytes);
  workspace_ = cuda::DeviceBuffer(kInitialWorkspace);

  // The reference: pre-activation G in fp32, then the activation or gate when there is one.
  cuda::DeviceBuffer g(size_t(p.batch * p.m * p.n) * 4);
  reference_gemm(p, args(0), g.as<float>(), stream());
  if (e.act == Activation::none && e.gate == GateKind::none) {
    ref_ = std::move(g);
  } else {
    ref_ = cuda::DeviceBuffer(size_t(elems_d(p)) * 4);
    reference_epilogue(p, g.as<float>(), ref_.as<float>(), stream());
  }
  if (is_fp8(p.out)) {
    scale_d_ = cuda::DeviceBuffer(sizeof(float));
    reference_fp8_output(p, ref_.as<float>(), scale_d_.as<float>(), stream());
  }
  stream_.sync();
}

size_t GemmBench::d_bytes() const { return size_t(elems_d(problem_)) * size_t(dtype_bytes(problem_.out)); }

GemmArgs GemmBench::args(int set) const {
  const InputSet& s = sets_[size_t(set) % sets_.size()];
  GemmArgs a;
  a.a = s.a.get();
  a.b = s.b.get();
  a.c = s.c.get();
  a.bias = s.bias.get();
  a.scale_a = s.scale_a.as<float>();
  a.scale_b = s.scale_b.as<float>();
  a.scale_d = scale_d_.as<float>();
  a.d = d_.get();
  a.workspace = workspace_.get();
  a.workspace_bytes = workspace_.bytes();
  return a;
}

Trial GemmBench::trial(const Candidate& candidate) {
  auto backend = find_backend<GemmProblem>(candidate.backend);
  GF_CHECK(backend, "unknown GEMM backend '{}'", candidate.backend);
  std::shared_ptr<Kernel> kernel = backend->build(problem_, candidate);
  Trial t = bind(*kernel);
  t.owned = std::move(kernel);
  return t;
}

Trial GemmBench::bind(Kernel& kernel) {
  if (kernel.workspace_bytes() > workspace_.bytes()) {
    GF_CUDA_CHECK(cudaStreamSynchronize(stream()));
    workspace_ = cuda::DeviceBuffer(kernel.workspace_bytes());
  }
  u_char* guard = static_cast<u_char*>(d_.get()) + d_bytes();
  Trial t;
  t.poison = [this, guard] {
    fill_nan(d_.get(), problem_.out, elems_d(problem_), stream());
    fill_guard(guard, kGuardBytes, stream());
  };
  t.launch = [this, &kernel](int set) { kernel.launch(args(set), stream()); };
  t.verify = [this, guard] {
    const Comparison c = compare(d_.get(), problem_.out, ref_.as<float>(), elems_d(problem_), stream());
    Verdict v{verdict(c, problem_.out), c.rel_err()};
    if (const int64_t damaged = guard_damage(guard, kGuardBytes, stream()); v.error.empty() && damaged > 0)
      v.error = fmt::format("wrote {} bytes past the end of D", damaged);
    return v;
  };
  // Each kernel finds its workspace zeroed, as a runtime hands it over (split-K counters start at
  // zero), whatever the kernel before left in it.
  if (const size_t bytes = kernel.workspace_bytes(); bytes > 0)
    t.reset = [this, bytes] { GF_CUDA_CHECK(cudaMemsetAsync(workspace_.get(), 0, bytes, stream())); };
  return t;
}

}  // namespace gf::harness

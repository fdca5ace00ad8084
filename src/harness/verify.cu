#include <fmt/format.h>

#include <cstring>

#include "cuda/check.hpp"
#include "cuda/convert.cuh"
#include "harness/dispatch.cuh"
#include "harness/verify.hpp"

namespace gf::harness {
namespace {

template <class T>
__global__ void compare_kernel(const T* out, const float* ref, int64_t n, float rel_slack, double* sums,
                               unsigned* max_bits, unsigned long long* nonfinite) {
  double e2 = 0, r2 = 0;
  float mx = 0;
  unsigned long long bad = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float o = to_float(out[i]), r = ref[i];
    if (!isfinite(o)) {
      ++bad;
      continue;
    }
    double d = double(o) - double(r);
    e2 += d * d;
    r2 += double(r) * double(r);
    mx = fmaxf(mx, fabsf(o - r) - rel_slack * fabsf(r));
  }
  for (int off = 16; off > 0; off /= 2) {
    e2 += __shfl_down_sync(0xffffffffu, e2, off);
    r2 += __shfl_down_sync(0xffffffffu, r2, off);
    mx = fmaxf(mx, __shfl_down_sync(0xffffffffu, mx, off));
    bad += __shfl_down_sync(0xffffffffu, bad, off);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicAdd(&sums[0], e2);
    atomicAdd(&sums[1], r2);
    atomicMax(max_bits, __float_as_uint(mx));  // non-negative floats order like their bits
    atomicAdd(nonfinite, bad);
  }
}

}  // namespace

Comparison compare(const void* out, DType t, const float* ref, int64_t count, cudaStream_t s) {
  struct Sums {
    double sums[2];
    unsigned max_bits;
    unsigned long long nonfinite;
  };
  Sums* dev = nullptr;
  GF_CUDA_CHECK(cudaMallocAsync(&dev, sizeof(Sums), s));
  GF_CUDA_CHECK(cudaMemsetAsync(dev, 0, sizeof(Sums), s));
  dispatch(t, [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    compare_kernel<<<grid_for(count, 256), 256, 0, s>>>(static_cast<const T*>(out), ref, count,
                                                        float(kWorstSlack * tolerance(t)), dev->sums, &dev->max_bits,
                                                        &dev->nonfinite);
  });
  GF_CUDA_CHECK(cudaGetLastError());
  Sums host{};
  GF_CUDA_CHECK(cudaMemcpyAsync(&host, dev, sizeof(Sums), cudaMemcpyDeviceToHost, s));
  GF_CUDA_CHECK(cudaFreeAsync(dev, s));
  GF_CUDA_CHECK(cudaStreamSynchronize(s));
  Comparison c;
  c.err_sq = host.sums[0];
  c.ref_sq = host.sums[1];
  unsigned bits = host.max_bits;
  float mx;
  std::memcpy(&mx, &bits, sizeof mx);
  c.worst_excess = mx;
  c.count = count;
  c.nonfinite = int64_t(host.nonfinite);
  return c;
}

double tolerance(DType out) {
  switch (out) {
    case DType::f32:
      return 1e-3;
    case DType::f16:
      return 5e-3;
    // fp8 outputs round to 3 (e4m3) or 2 (e5m2) mantissa bits: up to 2^-4 or 2^-3 of each value.
    case DType::e4m3:
      return 4e-2;
    case DType::e5m2:
      return 8e-2;
    default:
      return 1e-2;
  }
}

std::string verdict(const Comparison& c, DType out) {
  if (c.nonfinite > 0) return fmt::format("{} of {} outputs are NaN or inf", c.nonfinite, c.count);
  double tol = tolerance(out);
  if (!(c.rel_err() <= tol)) return fmt::format("relative error {:.3g} exceeds {:.3g}", c.rel_err(), tol);
  // A few wrong elements can hide in a small Frobenius error; bound the worst one too, beyond the
  // rounding its own magnitude explains (softmax rows of different lengths differ in scale a lot).
  double max_allowed = kWorstSlack * tol * c.ref_rms();
  if (!(c.worst_excess <= max_allowed))
    return fmt::format(
        "worst element error {:.3g} (beyond {} x tol x |ref|) exceeds {:.3g} ({} x tol x rms of the "
        "reference)",
        c.worst_excess, kWorstSlack, max_allowed, kWorstSlack);
  return "";
}

}  // namespace gf::harness

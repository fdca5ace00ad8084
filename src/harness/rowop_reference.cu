#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "cuda/check.hpp"
#include "cuda/convert.cuh"
#include "harness/rowop_reference.hpp"

namespace gf::harness {
namespace {

template <class T>
__device__ double ld(const T* p, int64_t i) {
  return double(to_float(p[i]));
}
// v as the kernel stores it in T.
template <class T>
__device__ double round_to(double v) {
  return double(to_float(from_float<T>(float(v))));
}

template <class T>
__global__ void reference_kernel(int op, int64_t rows, int64_t cols, const T* x, const T* w, const T* b, const T* res,
                                 const int* valid, double scale, double eps, float* ref, float* res_sum) {
  const int64_t r = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (r >= rows) return;
  const T* xr = x + r * cols;
  float* out = ref + r * cols;
  // The input as the kernel sees it: x, or x + residual rounded to the input dtype.
  auto in = [&](int64_t c) { return res ? round_to<T>(ld(xr, c) + ld(res + r * cols, c)) : ld(xr, c); };
  if (res)
    for (int64_t c = 0; c < cols; ++c) res_sum[r * cols + c] = float(in(c));
  if (op == 0) {  // softmax
    const int64_t n = valid ? (valid[r] < 0 ? 0 : (valid[r] < cols ? valid[r] : cols)) : cols;
    double mx = -INFINITY;
    bool nan = false;
    for (int64_t c = 0; c < n; ++c) {
      double v = in(c)*scale;
      nan |= isnan(v);
      mx = fmax(mx, v);
    }
    if (nan) mx = NAN;
    double sum = 0;
    for (int64_t c = 0; c < n; ++c) sum += exp(in(c)*scale - mx);
    const bool empty = valid && mx == -INFINITY;
    for (int64_t c = 0; c < cols; ++c) out[c] = c < n && !empty ? float(exp(in(c)*scale - mx) / sum) : 0.0f;
    return;
  }
  double mean = 0;
  if (op == 2) {
    for (int64_t c = 0; c < cols; ++c) mean += in(c);
    mean /= double(cols);
  }
  double ss = 0;
  for (int64_t c = 0; c < cols; ++c) ss += (in(c)-mean) * (in(c)-mean);
  const double rstd = 1.0 / sqrt(ss / double(cols) + eps);
  for (int64_t c = 0; c < cols; ++c) out[c] = float((in(c)-mean) * rstd * ld(w, c) + (op == 2 ? ld(b, c) : 0.0));
}

}  // namespace

void row_reference(const RowOpSpec& s, const RowOpArgs& a, float* ref, float* residual_sum, cudaStream_t stream) {
  const unsigned blocks = unsigned((s.rows + 127) / 128);
  auto run = [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    reference_kernel<T><<<blocks, 128, 0, stream>>>(
        int(s.kind), s.rows, s.cols, static_cast<const T*>(a.x), static_cast<const T*>(a.weight),
        static_cast<const T*>(a.bias), s.residual ? static_cast<const T*>(a.residual) : nullptr,
        s.valid_len ? a.valid_len : nullptr, double(a.scale), double(a.eps), ref, residual_sum);
  };
  switch (s.in) {
    case DType::f32:
      run(static_cast<float*>(nullptr));
      break;
    case DType::f16:
      run(static_cast<__half*>(nullptr));
      break;
    case DType::bf16:
      run(static_cast<__nv_bfloat16*>(nullptr));
      break;
    default:
      GF_FAIL("row reference: unsupported dtype {}", to_string(s.in));
  }
  GF_CUDA_CHECK(cudaGetLastError());
}

}  // namespace gf::harness

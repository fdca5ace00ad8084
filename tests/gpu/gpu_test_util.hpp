#pragma once
// Helpers for GPU tests: a fresh tuning DB path, copying device data back as floats and a float64
// CPU GEMM.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <random>
#include <vector>

#include "cuda/check.hpp"
#include "epilogue/activation.cuh"
#include "gemmforge/problem.hpp"

namespace gf::test {

// A tuning DB path in an empty directory of its own (name unique within the GPU tests).
inline std::filesystem::path fresh_db(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("gf_gpu_" + name + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir / "tuning.db";
}

inline std::vector<double> to_host(const void* dev, DType t, int64_t count) {
  std::vector<double> out(static_cast<size_t>(count));
  size_t bytes = size_t(count) * size_t(dtype_bytes(t));
  std::vector<unsigned char> raw(bytes);
  GF_CUDA_CHECK(cudaMemcpy(raw.data(), dev, bytes, cudaMemcpyDeviceToHost));
  for (int64_t i = 0; i < count; ++i) {
    const unsigned char* p = raw.data() + size_t(i) * size_t(dtype_bytes(t));
    switch (t) {
      case DType::f32:
        out[size_t(i)] = *reinterpret_cast<const float*>(p);
        break;
      case DType::f16:
        out[size_t(i)] = __half2float(*reinterpret_cast<const __half*>(p));
        break;
      case DType::bf16:
        out[size_t(i)] = __bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(p));
        break;
      default:
        out[size_t(i)] = NAN;
    }
  }
  return out;
}

inline double activate(double x, Activation a) { return epi::activate(x, a); }

// The problem's D in float64 from host copies of its inputs (no fp8 scales).
inline std::vector<double> cpu_gemm(const GemmProblem& p, const std::vector<double>& a, const std::vector<double>& b,
                                    const std::vector<double>& c, const std::vector<double>& bias) {
  const Epilogue& e = p.epilogue;
  std::vector<double> g(static_cast<size_t>(p.batch * p.m * p.n));
  for (int64_t z = 0; z < p.batch; ++z)
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        double acc = 0;
        for (int64_t k = 0; k < p.k; ++k) {
          double bv = p.layout == Layout::tn ? b[size_t((z * p.n + j) * p.k + k)] : b[size_t((z * p.k + k) * p.n + j)];
          acc += a[size_t((z * p.m + i) * p.k + k)] * bv;
        }
        double v = e.alpha * acc;
        size_t idx = size_t((z * p.m + i) * p.n + j);
        if (e.has_c()) v += e.beta * c[idx];
        if (e.bias == BiasKind::col) v += bias[size_t(j)];
        if (e.bias == BiasKind::row) v += bias[size_t(i)];
        g[idx] = v;
      }
  if (e.gate == GateKind::none) {
    for (auto& v : g) v = activate(v, e.act);
    return g;
  }
  int64_t cols = p.n / 2;
  std::vector<double> d(static_cast<size_t>(p.batch * p.m * cols));
  for (int64_t r = 0; r < p.batch * p.m; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      const double* row = g.data() + r * p.n;
      double gate = e.gate == GateKind::interleaved ? row[2 * j] : row[j];
      double up = e.gate == GateKind::interleaved ? row[2 * j + 1] : row[j + cols];
      d[size_t(r * cols + j)] = activate(gate, Activation::silu) * up;
    }
  return d;
}

inline double rel_err(const std::vector<double>& x, const std::vector<double>& ref) {
  double e2 = 0, r2 = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) return INFINITY;
    e2 += (x[i] - ref[i]) * (x[i] - ref[i]);
    r2 += ref[i] * ref[i];
  }
  return std::sqrt(e2 / r2);
}

}  // namespace gf::test

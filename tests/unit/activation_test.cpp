// The kernels' fast GELUs and pair SwiGLU (epilogue/activation.cuh) against the exact ones, in float64, on the
// host path of the same code: the device path's ex2 and rcp approximations add a few ulp of float
// to what is checked here.
#include "epilogue/activation.cuh"

#include <gtest/gtest.h>

#include <cmath>
#include <utility>

namespace gf {
namespace {

// The worst relative error of fast(x) against activate(x, act) in float64 where |act(x)| > 1e-3,
// and the worst absolute error below, on [-12, 12] in steps of 2^-10.
template <class Fast>
std::pair<double, double> worst_errors(Fast fast, Activation act) {
  double worst_rel = 0, worst_abs = 0;
  for (double x = -12; x <= 12; x += 1.0 / 1024) {
    const double exact = epi::activate(x, act), got = fast(float(x));
    if (std::fabs(exact) > 1e-3)
      worst_rel = std::max(worst_rel, std::fabs(got - exact) / std::fabs(exact));
    else
      worst_abs = std::max(worst_abs, std::fabs(got - exact));
  }
  return {worst_rel, worst_abs};
}

// The tails and the special values every fast GELU keeps. -inf gives NaN, as the exact formulas
// do in IEEE arithmetic (-inf * 0).
template <class Fast>
void expect_tails(Fast fast) {
  EXPECT_EQ(fast(0.0f), 0.0f);
  EXPECT_LT(std::fabs(fast(-30.0f)), 1e-11f);  // the left tail: not NaN, not -30
  EXPECT_EQ(fast(30.0f), 30.0f);
  EXPECT_EQ(fast(INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(fast(NAN)));
}

TEST(Activation, FastErfGeluMatchesErf) {
  const auto [rel, abs] = worst_errors(epi::gelu_erf_fast, Activation::gelu);
  EXPECT_LT(rel, 1e-4);  // bf16 and fp16 round at 2^-9 and 2^-12
  EXPECT_LT(abs, 1e-7);  // where |GELU| <= 1e-3
  expect_tails(epi::gelu_erf_fast);
}

TEST(Activation, FastTanhGeluMatchesTanh) {
  const auto [rel, abs] = worst_errors(epi::gelu_tanh_fast, Activation::gelu_tanh);
  EXPECT_LT(rel, 1e-5);
  EXPECT_LT(abs, 1e-7);
  expect_tails(epi::gelu_tanh_fast);
}

// The pair SwiGLU (one reciprocal for two gates) against silu(g) * up in float64: each element
// its own gate's, in every pairing, out to the tails where e^-g is held under 2^62; a NaN stays
// in its own element.
TEST(Activation, SwigluPairMatchesSwiglu) {
  const float gates[] = {-100.0f, -43.0f, -12.0f, -1.5f, -1e-30f, 0.0f, 0.75f, 3.0f, 12.0f, 88.0f, 1e30f};
  for (float g0 : gates)
    for (float g1 : gates) {
      const float g[2] = {g0, g1}, up[2] = {1.25f, -0.5f};
      float out[2];
      epi::swiglu2_fast(g, up, out);
      for (int e = 0; e < 2; ++e) {
        const double exact = epi::swiglu(double(g[e]), double(up[e]));
        ASSERT_TRUE(std::isfinite(out[e])) << g0 << " " << g1;
        EXPECT_LE(std::fabs(out[e] - exact), 1e-6 * std::fabs(exact) + 1e-16 * std::fabs(g[e])) << g0 << " " << g1;
      }
    }
  const float g[2] = {NAN, 2.0f}, up[2] = {1.0f, 1.0f};
  float out[2];
  epi::swiglu2_fast(g, up, out);
  EXPECT_TRUE(std::isnan(out[0]));
  EXPECT_NEAR(out[1], epi::swiglu(2.0, 1.0), 1e-6);
}

}  // namespace
}  // namespace gf

// The kernels' fast erf GELU (epilogue/activation.cuh) against the exact one, in float64, on the
// host path of the same code: the device path's exponential approximation adds a few ulp of float
// to what is checked here.
#include "epilogue/activation.cuh"

#include <gtest/gtest.h>

#include <cmath>

namespace gf {
namespace {

TEST(Activation, FastErfGeluMatchesErf) {
  double worst_rel = 0, worst_abs = 0;
  for (double x = -12; x <= 12; x += 1.0 / 1024) {
    const double exact = epi::activate(x, Activation::gelu);
    const double fast = epi::gelu_erf_fast(float(x));
    if (std::fabs(exact) > 1e-3)
      worst_rel = std::max(worst_rel, std::fabs(fast - exact) / std::fabs(exact));
    else
      worst_abs = std::max(worst_abs, std::fabs(fast - exact));
  }
  EXPECT_LT(worst_rel, 1.5e-4);  // bf16 and fp16 round at 2^-9 and 2^-12
  EXPECT_LT(worst_abs, 2e-7);    // where |GELU| <= 1e-3
  EXPECT_EQ(epi::gelu_erf_fast(0.0f), 0.0f);
  EXPECT_LT(std::fabs(epi::gelu_erf_fast(-30.0f)), 1e-11f);  // the left tail: -7 Phi(-7), not NaN
  EXPECT_LT(std::fabs(epi::gelu_erf_fast(-INFINITY)), 1e-11f);
  EXPECT_EQ(epi::gelu_erf_fast(30.0f), 30.0f);
  EXPECT_TRUE(std::isnan(epi::gelu_erf_fast(NAN)));
}

}  // namespace
}  // namespace gf

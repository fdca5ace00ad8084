// The verdict's thresholds on the CPU: an error at the tolerance passes, one just past it fails,
// as do a single element too far off and any NaN or inf.
#include <gtest/gtest.h>

#include "harness/verify.hpp"

using namespace gf;
using harness::Comparison;

namespace {
// A comparison of `count` elements with reference rms 1 and relative error `rel`.
Comparison with_error(double rel, int64_t count = 1000) {
  return {.err_sq = rel * rel * double(count), .ref_sq = double(count), .count = count};
}
}  // namespace

TEST(Verdict, PassesAtTheToleranceAndFailsJustPast) {
  for (DType t : {DType::bf16, DType::f16, DType::f32}) {
    const double tol = harness::tolerance(t);
    EXPECT_EQ(harness::verdict(with_error(0.99 * tol), t), "") << to_string(t);
    EXPECT_EQ(harness::verdict(with_error(tol), t), "") << to_string(t);
    EXPECT_NE(harness::verdict(with_error(1.01 * tol), t), "") << to_string(t);
  }
}

TEST(Verdict, OneElementTooFarOffFailsInsideTheFrobeniusBound) {
  const double tol = harness::tolerance(DType::bf16);
  Comparison c = with_error(0.1 * tol);
  c.worst_excess = harness::kWorstSlack * tol * 0.99;
  EXPECT_EQ(harness::verdict(c, DType::bf16), "");
  c.worst_excess = harness::kWorstSlack * tol * 1.01;
  EXPECT_NE(harness::verdict(c, DType::bf16).find("worst element"), std::string::npos);
}

TEST(Verdict, NanOrInfNeverPasses) {
  Comparison c = with_error(0);
  c.nonfinite = 1;
  EXPECT_NE(harness::verdict(c, DType::bf16).find("NaN"), std::string::npos);
  Comparison nan_error = with_error(std::nan(""));
  EXPECT_NE(harness::verdict(nan_error, DType::bf16), "");
}

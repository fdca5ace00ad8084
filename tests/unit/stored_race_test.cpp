// The stored races' lookup: a list's kernel by its own name, or, for a native ring deeper than 8
// stages in a race that held 8 at most, by its 8-stage twin; never a twin in a race that holds
// deeper rings itself.
#include "stored_race.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

using namespace gf;

namespace {

test::StoredRace race_of(std::map<std::string, double> us) {
  return test::race_of(GemmProblem::parse("16x4096x4096:bf16"), std::move(us));
}

const std::string kEight = "sm90_bf16_bf16_tn_64x16x64_co_s8_c1_k1_x1_g8m_plain_swap";
const std::string kTwelve = "sm90_bf16_bf16_tn_64x16x64_co_s12_c1_k1_x1_g8m_plain_swap";
const std::string kOther = "sm90_bf16_bf16_tn_128x16x64_co_s8_c2_k1_x1_g8m_plain_swap";

}  // namespace

TEST(StoredRace, ADeeperRingIsJudgedByItsTwinInAShallowRace) {
  const auto race = race_of({{kEight, 10.0}, {kOther, 12.0}});
  int twins = 0;
  EXPECT_DOUBLE_EQ(test::list_over_best(race, std::vector<std::string>{kTwelve}, &twins), 1.0);
  EXPECT_EQ(twins, 1);
}

TEST(StoredRace, ARaceWithDeepRingsIsTakenAsItIs) {
  // The 12-stage kernel was raced: its own time counts; a 16-stage one missing from it is untimed.
  const auto race = race_of({{kEight, 10.0}, {kTwelve, 11.0}});
  int twins = 0;
  EXPECT_DOUBLE_EQ(test::list_over_best(race, std::vector<std::string>{kTwelve}, &twins), 1.1);
  EXPECT_EQ(twins, 0);
  const std::string sixteen = "sm90_bf16_bf16_tn_64x16x64_co_s16_c1_k1_x1_g8m_plain_swap";
  EXPECT_TRUE(std::isinf(test::list_over_best(race, std::vector<std::string>{sixteen})));
}

TEST(StoredRace, NamesWithoutANativeRingHaveNoTwin) {
  const auto race = race_of({{kEight, 10.0}});
  EXPECT_EQ(test::ring_depth("wgmma_128x256_c2x1_ws"), 0);
  EXPECT_TRUE(std::isinf(test::list_over_best(race, std::vector<std::string>{"wgmma_128x256_c2x1_ws"})));
  EXPECT_TRUE(std::isinf(test::list_over_best(race, std::vector<std::string>{"other_64x16x64_co_s12_c1"})));
}

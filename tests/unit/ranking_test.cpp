// Cutting a model-ranked list to a search level's size, the --only name filter (core/ranking.hpp), and
// the median timings keep (core/median.hpp).
#include "core/ranking.hpp"

#include <gtest/gtest.h>

#include "core/median.hpp"

using namespace gf;

TEST(DiverseHead, CappedFirstTierThenFinerFamiliesThenModelOrder) {
  // Scores 0..19; coarse families of two (i / 2), fine families of one (i).
  std::vector<std::pair<double, int>> scored;
  for (int i = 19; i >= 0; --i) scored.emplace_back(double(i), i);
  auto coarse = [](const int& i) { return std::to_string(i / 2); };
  auto fine = [](const int& i) { return std::to_string(i); };
  // Three coarse families first (0, 2, 4), then the fine tier in model order.
  EXPECT_EQ(diverse_head<int>(scored, 8, {coarse, fine}, 3), (std::vector<int>{0, 2, 4, 1, 3, 5, 6, 7}));
  // Uncapped, the first tier takes one of each coarse family before anything else.
  EXPECT_EQ(diverse_head<int>(scored, 8, {coarse, fine}), (std::vector<int>{0, 2, 4, 6, 8, 10, 12, 14}));
  // A finer tier skips families an earlier tier already holds.
  auto same = [](const int&) { return std::string("x"); };
  EXPECT_EQ(diverse_head<int>(scored, 3, {coarse, same}, 1), (std::vector<int>{0, 1, 2}));
}

TEST(AddBestOf, TheBestWantedOfAFamilyUnlessTheListHoldsOneOfIt) {
  std::vector<std::pair<double, int>> scored = {{3.0, 30}, {1.0, 11}, {2.0, 21}, {0.5, 40}, {0.7, 13}};
  auto odd = [](const int& i) { return i % 2 == 1; };
  auto odd_past_12 = [](const int& i) { return i % 2 == 1 && i > 12; };
  std::vector<int> head = {40, 30};
  add_best_of(head, scored, odd, odd);
  EXPECT_EQ(head, (std::vector<int>{40, 30, 13}));  // 13 ranks before 11 and 21
  add_best_of(head, scored, odd, odd);
  EXPECT_EQ(head.size(), 3u);  // one of the family is there already
  head = {40, 11};             // one of the family, though not a wanted one: nothing added
  add_best_of(head, scored, odd, odd_past_12);
  EXPECT_EQ(head, (std::vector<int>{40, 11}));
  head = {40};
  add_best_of(head, scored, odd, [](const int& i) { return i > 100; });
  EXPECT_EQ(head.size(), 1u);  // none wanted
  // Judged by its first two alone (the fast list's head): 13 appended past 11, and not twice.
  head = {40, 30, 11};
  add_best_of(head, scored, odd, odd, 2);
  EXPECT_EQ(head, (std::vector<int>{40, 30, 11, 13}));
  head = {40, 30, 13};
  add_best_of(head, scored, odd, odd, 2);
  EXPECT_EQ(head, (std::vector<int>{40, 30, 13}));
}

TEST(NameMatches, AnyOfItsCommaSeparatedParts) {
  const char* name = "sm90_bf16_bf16_tn_256x192x64_co_s3_c2_k1_x2n_g8m_plain_tma1";
  EXPECT_TRUE(name_matches(name, ""));
  EXPECT_TRUE(name_matches(name, "256x192"));
  EXPECT_TRUE(name_matches(name, "128x256,256x192x64_co_s3"));
  // A text ending in '$' ends the name.
  const char* promoted = "sm90_e4m3_bf16_tn_64x128x128_pp_s8_c2_k1_x1_g8m_scalerowcol_tma2_promote";
  EXPECT_TRUE(name_matches(name, "plain_tma1$"));
  EXPECT_FALSE(name_matches(promoted, "scalerowcol_tma2$"));
  EXPECT_TRUE(name_matches(promoted, "scalerowcol_tma2$,_promote$"));
  EXPECT_FALSE(name_matches(name, "$"));
  EXPECT_TRUE(name_matches(name, ",_tma1"));
  EXPECT_FALSE(name_matches(name, "128x256,_tma2"));
  EXPECT_FALSE(name_matches(name, ","));
}

TEST(CloseField, TheBestThenTheOthersWithinTheBandFastestFirst) {
  const std::vector<double> times = {103.5, 102.5, 101.0, 0.0, 100.0};
  EXPECT_EQ(close_field(times, 4, 1.03, 4), (std::vector<size_t>{4, 2, 1}));  // 103.5 is out; failed (0) never counts
  EXPECT_EQ(close_field(times, 4, 1.04, 2), (std::vector<size_t>{4, 2}));     // at most two
  EXPECT_EQ(close_field(times, 4, 1.005, 4), (std::vector<size_t>{4}));       // nothing within 0.5% of 100
  EXPECT_EQ(close_field({50.0}, 0, 1.5, 3), (std::vector<size_t>{0}));
}

TEST(CloseFields, EachGroupsBestTwoWithinTheBandAndItsKeptOnes) {
  const std::vector<std::string> groups = {"cublaslt", "native", "cublaslt", "native", "cublaslt", "native", "cute"};
  const std::vector<double> times = {100.0, 98.0, 104.0, 0.0, 108.0, 120.0, 50.0};
  const std::vector<bool> keep = {false, false, false, false, true, false, false};
  // cuBLASLt: 100 and 104, and its kept 108 (within 10%); native: 98 alone (failed 0; 120 is out);
  // cute: 50 alone.
  EXPECT_EQ(close_fields(groups, times, keep, 1.10, 2), (std::vector<size_t>{0, 2, 4, 1, 6}));
  // One each, the kept one still: 100, 108; 98; 50.
  EXPECT_EQ(close_fields(groups, times, keep, 1.10, 1), (std::vector<size_t>{0, 4, 1, 6}));
  // A band too narrow for the kept one.
  EXPECT_EQ(close_fields(groups, times, keep, 1.05, 2), (std::vector<size_t>{0, 2, 1, 6}));
  EXPECT_TRUE(close_fields({"native"}, {0.0}, {false}, 1.10, 2).empty());
}

// The middle of a few timings, the mean of the middle two for an even count: an outlier pass (a
// kernel's alone time read 1403 and 1526 us in two tunes) moves it no further than its neighbour.
TEST(Median, MiddleValueOrMeanOfTheMiddleTwo) {
  EXPECT_EQ(gf::median({}), 0.0);
  EXPECT_EQ(gf::median({3.0}), 3.0);
  EXPECT_EQ(gf::median({5.0, 1.0, 3.0}), 3.0);
  EXPECT_EQ(gf::median({1400.0, 1526.0, 1402.0, 1404.0}), 1403.0);
}

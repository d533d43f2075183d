#include "taot/sim/case_generator.h"

#include <gtest/gtest.h>

#include "taot/planner/load_stats.h"

namespace taot::sim {
namespace {

TEST(CaseGeneratorTest, HitsTheImbalanceWithinHalfAPoint) {
  for (int ranks : {16, 32, 64}) {
    for (double imbalance : {0.1, 0.3, 0.5, 0.7, 0.9}) {
      for (uint64_t seed : {1, 2, 3}) {
        CaseOptions o;
        o.ranks = ranks;
        o.experts = ranks * 4;
        o.imbalance = imbalance;
        o.seed = seed;
        const GeneratedCase g = GenerateCase(o).value();
        EXPECT_NEAR(ImbalancePct(RankLoadsBefore(g.request)), imbalance * 100, 0.5)
            << ranks << " " << imbalance << " " << seed;
        EXPECT_DOUBLE_EQ(g.imbalance_pct, ImbalancePct(RankLoadsBefore(g.request)));
      }
    }
  }
}

TEST(CaseGeneratorTest, EverySourceRoutesTopKPicksPerTokenAtMostOncePerExpert) {
  CaseOptions o;
  o.ranks = 8;
  o.experts = 64;
  o.imbalance = 0.9;
  o.top_k = 4;
  o.tokens_per_rank = 1000;
  const GeneratedCase g = GenerateCase(o).value();
  for (int s = 0; s < 8; ++s) {
    int64_t sum = 0;
    for (int e = 0; e < 64; ++e) {
      EXPECT_LE(g.request.load.at(s, e), 1000);
      sum += g.request.load.at(s, e);
    }
    EXPECT_EQ(sum, 4000);
  }
}

TEST(CaseGeneratorTest, DeterministicInTheSeed) {
  CaseOptions o;
  o.imbalance = 0.5;
  o.seed = 42;
  const GeneratedCase a = GenerateCase(o).value();
  const GeneratedCase b = GenerateCase(o).value();
  EXPECT_EQ(a.request.load.data(), b.request.load.data());
  o.seed = 43;
  EXPECT_NE(GenerateCase(o).value().request.load.data(), a.request.load.data());
}

TEST(CaseGeneratorTest, BurstMakesTheChosenExpertsHot) {
  CaseOptions o;
  o.hot_experts = 3;
  o.hot_factor = 10;
  const GeneratedCase g = GenerateCase(o).value();
  ASSERT_EQ(g.hot_experts.size(), 3u);
  const std::vector<int64_t> totals = ExpertTotals(g.request);
  int64_t coldest_hot = totals[g.hot_experts[0]];
  for (int e : g.hot_experts) coldest_hot = std::min(coldest_hot, totals[e]);
  int64_t hottest_other = 0;
  for (int e = 0; e < o.experts; ++e) {
    if (std::find(g.hot_experts.begin(), g.hot_experts.end(), e) == g.hot_experts.end()) {
      hottest_other = std::max(hottest_other, totals[e]);
    }
  }
  EXPECT_GT(coldest_hot, 3 * hottest_other);
}

TEST(CaseGeneratorTest, ErrorsNameTheOption) {
  CaseOptions o;
  o.experts = 100;
  EXPECT_NE(GenerateCase(o).status().message().find("experts: must be a positive multiple of ranks"),
            std::string::npos);
  o = CaseOptions{};
  o.imbalance = 0.001;
  EXPECT_NE(GenerateCase(o).status().message().find("imbalance: 0.001 is below what the noise"), std::string::npos);
  o = CaseOptions{};
  o.imbalance = -1;
  EXPECT_NE(GenerateCase(o).status().message().find("imbalance:"), std::string::npos);
}

}  // namespace
}  // namespace taot::sim

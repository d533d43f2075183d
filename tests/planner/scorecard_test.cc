#include "taot/planner/scorecard.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

#include "taot/planner/load_stats.h"
#include "taot/planner/registry.h"
#include "test_requests.h"

namespace taot {
namespace {

TEST(LoadCapTest, RoundsTheTargetDownButNeverBelowTheCeilingOfTheMean) {
  EXPECT_EQ(LoadCap(1000, 10, 2.0), 102);  // exactly 102: no rounding down to 101
  EXPECT_EQ(LoadCap(1000, 10, 0.0), 100);
  EXPECT_EQ(LoadCap(1001, 10, 0.0), 101);  // ceil(100.1)
  EXPECT_EQ(LoadCap(1001, 10, 0.5), 101);  // floor(100.6) = 100 < ceil(mean)
  EXPECT_EQ(LoadCap(0, 4, 2.0), 0);
}

TEST(ImbalanceTest, IsMaxOverMeanMinusOne) {
  const std::vector<int64_t> loads = {150, 50, 100, 100};
  EXPECT_DOUBLE_EQ(ImbalancePct(loads), 50.0);
  EXPECT_DOUBLE_EQ(ImbalancePct(std::vector<int64_t>{0, 0}), 0.0);
}

// 4 ranks (2 per node, λ = 3), 1 expert each.
PlanRequest Request() {
  PlanRequest r = testing::MakeRequest(4, 4, 2, {{60, 10, 10, 10}, {60, 10, 10, 10}, {0, 0, 0, 0}, {0, 0, 0, 0}},
                                       /*ranks_per_node=*/2);
  r = testing::Reshaped(r, [](Problem& p) { p.expert_bytes = 100; });
  return r;
}

TEST(ScorecardTest, CountsTransfersBytesTokensAndImbalance) {
  PlanRequest r = Request();
  r.target_imbalance_pct = 0;
  Plan plan;
  plan.replicas = {{0, 1}, {0, 2}, {0, 3}};
  // Expert 0 has 120 tokens (60 from rank 0, 60 from rank 1); loads before 120/20/20/20.
  plan.assignments = {{1, 0, 1, 30}, {0, 0, 2, 20}, {1, 0, 3, 20}};
  const Scorecard s = Score(r, plan, 12.5);
  EXPECT_NEAR(s.imbalance_before_pct, (120.0 - 45.0) / 45.0 * 100, 1e-9);
  // After: 50 / 50 / 40 / 40 (mean 45).
  EXPECT_NEAR(s.imbalance_after_pct, (50.0 - 45.0) / 45.0 * 100, 1e-9);
  EXPECT_EQ(s.intra_node_transfers, 1);
  EXPECT_EQ(s.inter_node_transfers, 2);
  EXPECT_DOUBLE_EQ(s.weighted_cost, 1 + 2 * 3);
  EXPECT_EQ(s.bytes_moved_intra_node, 100);
  EXPECT_EQ(s.bytes_moved_inter_node, 200);
  EXPECT_FALSE(s.target_met);
  EXPECT_DOUBLE_EQ(s.plan_time_us, 12.5);
  // Local: source 0 keeps 40 of expert 0, source 1 computes 30 of expert 0 and 10 of expert 1.
  // Intra: source 0 -> expert 1 on rank 1, source 1 -> the 10 of expert 0 left on rank 0.
  // Inter: the 20 + 20 sent to ranks 2 and 3, and experts 2 and 3 from both sources.
  EXPECT_EQ(s.tokens_local, 80);
  EXPECT_EQ(s.tokens_intra_node, 20);
  EXPECT_EQ(s.tokens_inter_node, 80);
}

TEST(ScorecardTest, ResidentReplicasReusedCostNothing) {
  PlanRequest r = Request();
  r.resident = {{0, 2}};
  Plan plan;
  plan.replicas = {{0, 2}, {0, 1}};
  const Scorecard s = Score(r, plan, 0);
  EXPECT_EQ(s.reused_replicas, 1);
  EXPECT_EQ(s.inter_node_transfers, 0);
  EXPECT_EQ(s.intra_node_transfers, 1);
  EXPECT_DOUBLE_EQ(s.weighted_cost, 1);
}

TEST(ScorecardTest, TargetMetUsesTheWholeTokenCap) {
  PlanRequest r = testing::MakeRequest(2, 2, 1, {{51, 0}, {0, 50}}, 2);
  r.target_imbalance_pct = 0;  // mean 50.5: the best integer plan has a rank at 51
  const Scorecard s = Score(r, Plan{}, 0);
  EXPECT_TRUE(s.target_met);
}

// The token counts against a plain classification of every token (each (source, expert) entry at
// its home less what goes to guests, and each assignment at its guest), on planners' plans over
// topologies whose nodes are not runs of ranks; and the score from precomputed totals is the same.
TEST(ScorecardTest, TokenCountsMatchAPlainClassificationOfEveryToken) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 24; ++trial) {
    const int ranks = 4 + static_cast<int>(rng() % 13);
    PlanRequest r = testing::RandomRequest(ranks, ranks * 4, 2, rng(), 4);
    std::vector<int> node_of(static_cast<size_t>(ranks));
    for (int i = 0; i < ranks; ++i) node_of[static_cast<size_t>(i)] = i % (1 + static_cast<int>(rng() % 4));
    std::shuffle(node_of.begin(), node_of.end(), rng);
    r = testing::Reshaped(r, [&](Problem& p) { p.topology = Topology::FromNodes(node_of, 3).value(); });
    const Plan plan = PlannerRegistry::BuiltIn().Create(trial % 2 == 0 ? "taot" : "echo").value()->MakePlan(r).value();
    int64_t counts[3] = {0, 0, 0};  // local, intra-node, inter-node
    auto add = [&](int source, int rank, int64_t tokens) {
      counts[source == rank ? 0 : r.topology().same_node(source, rank) ? 1 : 2] += tokens;
    };
    for (int s = 0; s < ranks; ++s) {
      for (int e = 0; e < r.experts(); ++e) {
        int64_t away = 0;
        for (const Assignment& a : plan.assignments) away += a.source == s && a.expert == e ? a.tokens : 0;
        add(s, r.home_of(e), r.load.at(s, e) - away);
      }
    }
    for (const Assignment& a : plan.assignments) add(a.source, a.rank, a.tokens);
    const Scorecard score = Score(r, plan, 1.5);
    EXPECT_EQ(score.tokens_local, counts[0]) << "trial " << trial;
    EXPECT_EQ(score.tokens_intra_node, counts[1]) << "trial " << trial;
    EXPECT_EQ(score.tokens_inter_node, counts[2]) << "trial " << trial;
    const Scorecard again = Score(r, plan, 1.5, ExpertTotals(r));
    EXPECT_EQ(std::tie(again.tokens_local, again.tokens_intra_node, again.tokens_inter_node, again.weighted_cost,
                       again.imbalance_after_pct, again.target_met),
              std::tie(score.tokens_local, score.tokens_intra_node, score.tokens_inter_node, score.weighted_cost,
                       score.imbalance_after_pct, score.target_met));
  }
}

}  // namespace
}  // namespace taot

#include "round_report.h"

#include <gtest/gtest.h>

namespace taot::simranks {
namespace {

// 4 ranks, 2 per node, 4 experts (one per rank); rank 0's expert 0 is hot.
LoadMatrix HotLoad() {
  LoadMatrix load(4, 4);
  for (int s = 0; s < 4; ++s) {
    load.at(s, 0) = 70;
    for (int e = 1; e < 4; ++e) load.at(s, e) = 10;
  }
  return load;
}

TEST(RoundReportTest, ScoresThePlanOnTheNodesTheRanksNamed) {
  Plan plan;
  // Half of what ranks 2 and 3 route to expert 0 (home: rank 0, node 0) goes to a replica on rank
  // 2, on the other node: one inter-node transfer.
  plan.replicas = {{0, 2}};
  plan.assignments = {{2, 0, 2, 35}, {3, 0, 2, 35}};
  absl::StatusOr<std::shared_ptr<const Problem>> problem =
      SimulatedProblem(4, 4, /*ranks_per_node=*/2, /*slots_per_rank=*/1);
  ASSERT_TRUE(problem.ok()) << problem.status();
  const Scorecard s = ScoreRound(*problem, HotLoad(), plan);
  EXPECT_EQ(s.intra_node_transfers, 0);
  EXPECT_EQ(s.inter_node_transfers, 1);
  // Rank 0 computes 280 of 400 tokens (mean 100) before, 210 after.
  EXPECT_DOUBLE_EQ(s.imbalance_before_pct, 180);
  EXPECT_DOUBLE_EQ(s.imbalance_after_pct, 110);
  // Across nodes: ranks 0 and 1 send 10 to each of ranks 2 and 3; ranks 2 and 3 send 10 to rank 1
  // and their 35 left of expert 0 to rank 0.
  EXPECT_EQ(s.tokens_inter_node, 20 + 20 + 45 + 45);
}

TEST(RoundReportTest, ARankPerNodeMakesEveryTransferInterNode) {
  Plan plan;
  plan.replicas = {{0, 1}};
  plan.assignments = {{1, 0, 1, 70}};
  const Scorecard s = ScoreRound(*SimulatedProblem(4, 4, 1, 1), HotLoad(), plan);
  EXPECT_EQ(s.inter_node_transfers, 1);
  EXPECT_EQ(s.intra_node_transfers, 0);
}

TEST(RoundReportTest, ABadShapeIsAnError) {
  EXPECT_FALSE(SimulatedProblem(4, 6, 2, 1).ok());  // experts not a multiple of the ranks
}

TEST(RoundReportTest, FormatsADaemonPlanAsOneLine) {
  Scorecard s;
  s.imbalance_before_pct = 70;
  s.imbalance_after_pct = 1.94;
  s.intra_node_transfers = 3;
  s.inter_node_transfers = 1;
  s.tokens_inter_node = 1234;
  client::LayerPlan plan;
  plan.identity = {7, 0xdeadbeef, Provenance::kDaemonRound, ""};
  EXPECT_EQ(FormatRound(2, 1, s, plan),
            "step   2 layer  1  imbalance  70.0% ->   1.9%  transfers  3 intra  1 inter  tokens across nodes    1234  "
            "daemon v7 00000000deadbeef");
}

TEST(RoundReportTest, APlanTheDaemonDidNotMakeSaysWhy) {
  client::LayerPlan plan;
  plan.identity.provenance = Provenance::kLocalPlan;
  plan.identity.reason = "not every rank is registered with the daemon";
  const std::string line = FormatRound(0, 0, Scorecard{}, plan);
  EXPECT_NE(line.find("local v0 0000000000000000  FALLBACK: not every rank is registered with the daemon"),
            std::string::npos)
      << line;
}

TEST(RoundReportTest, SummarizesRoundsAndLatencyPercentiles) {
  std::vector<double> latencies;
  for (int i = 100; i >= 1; --i) latencies.push_back(i);
  const Summary s = Summarize(4, 25, 1, 0, latencies);
  EXPECT_EQ(s.p50_us, 50);
  EXPECT_EQ(s.p99_us, 99);
  EXPECT_EQ(FormatSummary(s),
            "4 rounds x 25 ranks: 1 fallback rounds, 0 plans that differ from rank 0's; plan latency p50 50 us, "
            "p99 99 us");
  EXPECT_EQ(Summarize(0, 4, 0, 0, {}).p99_us, 0);
}

}  // namespace
}  // namespace taot::simranks

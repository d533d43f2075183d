// `echo` on a case small enough to follow ECHO's code (offloading_planner.py, PR 2368) by hand.
// Expert totals 60, 34, 4, 2 on 4 ranks (one expert each): the floored mean is 25, so expert 0
// spills 35 and expert 1 spills 9; ranks 3 and 2 have room 23 and 21. Laid end to end, largest
// first: expert 0 fills rank 3 (23) and runs over into rank 2 (12), expert 1 takes the rest of
// rank 2 (9).
#include <gtest/gtest.h>

#include "taot/planner/registry.h"
#include "taot/planner/run_planner.h"
#include "test_requests.h"

namespace taot::testing {
namespace {

PlanRequest TwoSpillsRequest(int slots) {
  return MakeRequest(4, 4, slots, {{7, 10, 0, 0}, {13, 24, 0, 0}, {40, 0, 0, 0}, {0, 0, 4, 2}}, 2);
}

ScoredPlan PlanWithEcho(const PlanRequest& request) {
  auto planner = PlannerRegistry::BuiltIn().Create("echo", {});
  EXPECT_TRUE(planner.ok()) << planner.status();
  auto plan = RunPlanner(**planner, request);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return *plan;
}

// Expert 0's slots, rank 2 (capacity 12) then rank 3 (23): breadth first, floor(share x
// capacity) from sources 0..2 (7, 13, 40 of 60 tokens): 1, 2, 8 and 2, 4, 15; depth first, the
// 1 + 2 still missing come from source 0's remaining 4 tokens, in slot order.
const std::vector<Assignment> kExpertZero = {{0, 0, 2, 2}, {0, 0, 3, 4}, {1, 0, 2, 2},
                                             {1, 0, 3, 4}, {2, 0, 2, 8}, {2, 0, 3, 15}};

TEST(EchoTest, SpillRunsOverRanksAndBothPassesSplitItsTokens) {
  const ScoredPlan scored = PlanWithEcho(TwoSpillsRequest(2));
  EXPECT_EQ(scored.plan.replicas, (std::vector<Replica>{{0, 2}, {0, 3}, {1, 2}}));
  // Expert 1's 9 on rank 2: floor(10/34 x 9) = 2 and floor(24/34 x 9) = 6, then 1 more from
  // source 0.
  std::vector<Assignment> expected = kExpertZero;
  expected.insert(expected.begin() + 2, Assignment{0, 1, 2, 3});
  expected.insert(expected.begin() + 5, Assignment{1, 1, 2, 6});
  EXPECT_EQ(scored.plan.assignments, expected);
  EXPECT_EQ(scored.score.imbalance_after_pct, 0.0);
}

TEST(EchoTest, RankKeepsItsKLargestChunksAndTheRestStaysHome) {
  // K = 1: rank 2 keeps expert 0's 12 over expert 1's 9, which stays home (34 on rank 1).
  const ScoredPlan scored = PlanWithEcho(TwoSpillsRequest(1));
  EXPECT_EQ(scored.plan.replicas, (std::vector<Replica>{{0, 2}, {0, 3}}));
  EXPECT_EQ(scored.plan.assignments, kExpertZero);
  EXPECT_DOUBLE_EQ(scored.score.imbalance_after_pct, 36.0);
}

TEST(EchoTest, NoSlotsGiveTheEmptyPlan) {
  const ScoredPlan scored = PlanWithEcho(TwoSpillsRequest(0));
  EXPECT_TRUE(scored.plan.replicas.empty());
  EXPECT_TRUE(scored.plan.assignments.empty());
}

}  // namespace
}  // namespace taot::testing

#include "taot/planner/plan_validator.h"

#include <gtest/gtest.h>

#include "test_requests.h"

namespace taot {
namespace {

// 4 ranks, 2 experts each, 2 per node; expert 0 (home 0) is hot.
PlanRequest Request() {
  return testing::MakeRequest(
      4, 8, 1,
      {{40, 2, 2, 2, 2, 2, 2, 2}, {40, 2, 2, 2, 2, 2, 2, 2}, {40, 2, 2, 2, 2, 2, 2, 2}, {40, 2, 2, 2, 2, 2, 2, 2}},
      /*ranks_per_node=*/2);
}

std::string Error(const Plan& plan) { return std::string(ValidatePlan(Request(), plan).message()); }

TEST(ValidatePlanTest, AcceptsAValidPlan) {
  Plan plan;
  plan.replicas = {{0, 1}, {0, 3}};
  plan.assignments = {{0, 0, 1, 40}, {1, 0, 1, 10}, {3, 0, 3, 40}};
  EXPECT_TRUE(ValidatePlan(Request(), plan).ok()) << Error(plan);
}

TEST(ValidatePlanTest, RejectsEachBrokenRule) {
  Plan plan;
  plan.replicas = {{0, 0}};
  EXPECT_EQ(Error(plan), "replicas[0]: rank 0 is the home of expert 0 (a replica lives on a guest rank)");
  plan.replicas = {{0, 1}, {0, 1}};
  EXPECT_EQ(Error(plan), "replicas[1]: expert 0 is placed on rank 1 twice");
  plan.replicas = {{0, 1}, {4, 1}};
  EXPECT_EQ(Error(plan), "replicas[1]: rank 1 holds more than slots_per_rank = 1 replicas");
  plan.replicas = {{8, 1}};
  EXPECT_EQ(Error(plan), "replicas[0]: expert 8 is out of range [0, 8)");
  plan.replicas = {{0, 4}};
  EXPECT_EQ(Error(plan), "replicas[0]: rank 4 is out of range [0, 4)");

  plan.replicas = {{0, 1}};
  plan.assignments = {{0, 0, 2, 5}};
  EXPECT_EQ(Error(plan), "assignments[0]: rank 2 holds no replica of expert 0");
  plan.assignments = {{0, 0, 1, 0}};
  EXPECT_EQ(Error(plan), "assignments[0]: tokens must be > 0, got 0");
  plan.assignments = {{0, 0, 1, 41}};
  EXPECT_EQ(Error(plan), "assignments[0]: source 0 sends 41 tokens of expert 0 to guests but routes only 40 to it");
  plan.replicas = {{0, 1}, {0, 2}};
  plan.assignments = {{0, 0, 1, 30}, {0, 0, 2, 11}};
  EXPECT_EQ(Error(plan), "assignments[1]: source 0 sends 41 tokens of expert 0 to guests but routes only 40 to it");
  plan.assignments = {{0, 0, 1, 3}, {0, 0, 1, 3}};
  EXPECT_EQ(Error(plan), "assignments[1]: (source 0, expert 0, rank 1) appears twice");
  plan.assignments = {{5, 0, 1, 3}};
  EXPECT_EQ(Error(plan), "assignments[0]: source 5 is out of range [0, 4)");
}

}  // namespace
}  // namespace taot

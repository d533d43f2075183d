// Canonicalize against the plain sort it replaces: the same order on shuffled plans of every
// planner and on entries a valid plan would not have (duplicates, a negative source).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "taot/planner/plan.h"
#include "taot/planner/registry.h"
#include "test_requests.h"

namespace taot {
namespace {

Plan Sorted(Plan plan) {
  std::sort(plan.replicas.begin(), plan.replicas.end());
  std::sort(plan.assignments.begin(), plan.assignments.end());
  return plan;
}

TEST(CanonicalizeTest, OrdersAsThePlainSortDoes) {
  std::mt19937_64 rng(7);
  for (const std::string& name : PlannerRegistry::BuiltIn().names()) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      Plan plan =
          PlannerRegistry::BuiltIn().Create(name).value()->MakePlan(testing::RandomRequest(16, 64, 2, seed)).value();
      std::shuffle(plan.replicas.begin(), plan.replicas.end(), rng);
      std::shuffle(plan.assignments.begin(), plan.assignments.end(), rng);
      Plan canonical = plan;
      Canonicalize(canonical);
      EXPECT_EQ(canonical, Sorted(plan)) << name << " seed " << seed;
    }
  }
}

TEST(CanonicalizeTest, OrdersEntriesNoValidPlanHasAsThePlainSortDoes) {
  Plan plan;
  plan.assignments = {{3, 1, 2, 5}, {0, 4, 1, 9}, {3, 1, 2, 4}, {3, 1, 2, 5}, {-1, 0, 0, 1}, {0, 4, 0, 9}};
  Plan canonical = plan;
  Canonicalize(canonical);
  EXPECT_EQ(canonical, Sorted(plan));
  plan.assignments.erase(plan.assignments.begin() + 4);  // no negative source: the counting sort
  canonical = plan;
  Canonicalize(canonical);
  EXPECT_EQ(canonical, Sorted(plan));
  Canonicalize(canonical);  // already canonical: unchanged
  EXPECT_EQ(canonical, Sorted(plan));
}

}  // namespace
}  // namespace taot

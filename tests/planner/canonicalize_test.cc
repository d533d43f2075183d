// Canonicalize against the plain sort it replaces: the same order on shuffled plans of every
// planner and on entries a valid plan would not have (duplicates, a negative source).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <tuple>

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

// A planner's own order (taot's: by expert, each expert's guests out of rank order), and the same
// entries by expert with each expert's in reverse (source, rank, tokens) order: each source's
// entries come by expert, so they are sorted in place by insertion, as the plain sort orders them.
TEST(CanonicalizeTest, OrdersEntriesThatComeByExpertAsThePlainSortDoes) {
  int reordered = 0;
  for (const std::string& name : PlannerRegistry::BuiltIn().names()) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      Plan plan =
          PlannerRegistry::BuiltIn().Create(name).value()->MakePlan(testing::RandomRequest(16, 64, 2, seed)).value();
      Plan canonical = plan;
      Canonicalize(canonical);
      EXPECT_EQ(canonical, Sorted(plan)) << name << " seed " << seed;
      std::sort(plan.assignments.begin(), plan.assignments.end(), [](const Assignment& a, const Assignment& b) {
        return std::tie(a.expert, b.source, b.rank, b.tokens) < std::tie(b.expert, a.source, a.rank, a.tokens);
      });
      canonical = plan;
      Canonicalize(canonical);
      EXPECT_EQ(canonical, Sorted(plan)) << name << " seed " << seed << ", each expert's entries reversed";
      reordered += !(plan == canonical);
    }
  }
  EXPECT_GT(reordered, 10);
  // Entries no valid plan has, by expert: an expert and ranks below zero, (source, expert, rank)
  // twice with other tokens.
  Plan plan;
  plan.assignments = {{3, -1, 4, 1}, {3, -1, -2, 1}, {3, 0, 7, 2}, {3, 0, -5, 3},
                      {3, 0, 7, 1},  {3, 5, 2, 2},   {3, 5, 1, 9}, {3, 5, 1, 4}};
  Plan canonical = plan;
  Canonicalize(canonical);
  EXPECT_EQ(canonical, Sorted(plan));
  // One expert's long run in reverse rank order (insertion would be quadratic: it stops and sorts
  // the whole source), after a few entries in order and before one more expert.
  plan.assignments = {{0, 1, 5, 2}, {0, 2, 1, 3}};
  for (int rank = 599; rank >= 0; --rank) plan.assignments.push_back({0, 3, rank, 1 + rank % 7});
  plan.assignments.push_back({0, 4, 2, 8});
  canonical = plan;
  Canonicalize(canonical);
  EXPECT_EQ(canonical, Sorted(plan));
}

}  // namespace
}  // namespace taot

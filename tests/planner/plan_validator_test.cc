#include "taot/planner/plan_validator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "taot/planner/plan_hash.h"
#include "taot/planner/registry.h"
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
  plan.replicas = {{6, 2}, {0, 1}, {6, 2}};  // unsorted: the pair's second place is named
  EXPECT_EQ(Error(plan), "replicas[2]: expert 6 is placed on rank 2 twice");
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
  // A count near the int64 limit after others of the same (source, expert): refused, its sum
  // named exactly, with no overflow on the way (the sanitized build would say).
  plan.assignments = {{0, 0, 1, 30}, {0, 0, 2, std::numeric_limits<int64_t>::max() - 7}};
  EXPECT_EQ(Error(plan),
            "assignments[1]: source 0 sends 9223372036854775830 tokens of expert 0 to guests but routes only 40 "
            "to it");
  plan.assignments = {{0, 0, 1, 3}, {0, 0, 1, 3}};
  EXPECT_EQ(Error(plan), "assignments[1]: (source 0, expert 0, rank 1) appears twice");
  plan.assignments = {{5, 0, 1, 3}};
  EXPECT_EQ(Error(plan), "assignments[0]: source 5 is out of range [0, 4)");
}

// An oracle for the assignment rules, written plainly: every entry in range with tokens > 0, on a
// rank that holds a replica of its expert, no (source, expert, rank) twice, and no source sending
// more of an expert to guests than it routes to it.
bool AssignmentsKeepTheRules(const PlanRequest& request, const Plan& plan) {
  const std::set<std::pair<int, int>> held = [&] {
    std::set<std::pair<int, int>> out;
    for (const Replica& r : plan.replicas) out.emplace(r.expert, r.rank);
    return out;
  }();
  std::set<std::tuple<int, int, int>> seen;
  std::map<std::pair<int, int>, int64_t> sent;
  for (const Assignment& a : plan.assignments) {
    if (a.source < 0 || a.source >= request.ranks() || a.expert < 0 || a.expert >= request.experts() || a.rank < 0 ||
        a.rank >= request.ranks() || a.tokens <= 0 || !held.contains({a.expert, a.rank}) ||
        !seen.emplace(a.source, a.expert, a.rank).second) {
      return false;
    }
    if ((sent[{a.source, a.expert}] += a.tokens) > request.load.at(a.source, a.expert)) return false;
  }
  return true;
}

// In canonical order one source's last entry and the next source's first may share expert and
// rank: that is neither a pair twice nor one sum of tokens.
TEST(ValidatePlanTest, ACanonicalPlanChecksEachSourceApart) {
  Plan plan;
  plan.replicas = {{0, 1}};
  plan.assignments = {{0, 0, 1, 30}, {1, 0, 1, 30}, {2, 0, 1, 30}};
  ASSERT_TRUE(std::is_sorted(plan.assignments.begin(), plan.assignments.end()));
  EXPECT_TRUE(ValidatePlan(Request(), plan).ok()) << Error(plan);
  plan.assignments = {{0, 0, 1, 30}, {1, 0, 1, 30}, {1, 0, 1, 5}};
  EXPECT_FALSE(ValidatePlan(Request(), plan).ok());
}

// A rank holding a few replicas and one holding many (lifted slots): the check finds what each
// rank holds and only that, whichever side of a held expert the missing one falls.
TEST(ValidatePlanTest, FindsAReplicaAmongFewOrMany) {
  // 2 ranks, 24 experts: experts 0-11 live on rank 0, 12-23 on rank 1; every source routes 5
  // tokens to each expert.
  const PlanRequest request =
      testing::MakeRequest(2, 24, 2, {std::vector<int64_t>(24, 5), std::vector<int64_t>(24, 5)}, 2);
  Plan plan;
  for (int e = 0; e < 12; e += 1) {
    if (e != 6) plan.replicas.push_back({e, 1});  // 11 on rank 1: searched
  }
  plan.replicas.push_back({13, 0});
  plan.replicas.push_back({20, 0});  // 2 on rank 0: scanned
  std::sort(plan.replicas.begin(), plan.replicas.end());
  for (int e : {0, 5, 7, 11}) plan.assignments.push_back({0, e, 1, 5});
  for (int e : {13, 20}) plan.assignments.push_back({1, e, 0, 5});
  Canonicalize(plan);
  EXPECT_TRUE(ValidatePlan(request, plan, SlotLimit::kLifted).ok())
      << ValidatePlan(request, plan, SlotLimit::kLifted).message();
  for (const auto& [expert, rank] : std::vector<std::pair<int, int>>{{6, 1}, {14, 0}, {12, 0}, {21, 0}}) {
    Plan broken = plan;
    broken.assignments.push_back({rank == 1 ? 0 : 1, expert, rank, 5});
    Canonicalize(broken);
    EXPECT_EQ(ValidatePlan(request, broken, SlotLimit::kLifted).message(),
              "assignments[" +
                  std::to_string(std::find(broken.assignments.begin(), broken.assignments.end(),
                                           Assignment{rank == 1 ? 0 : 1, expert, rank, 5}) -
                                 broken.assignments.begin()) +
                  "]: rank " + std::to_string(rank) + " holds no replica of expert " + std::to_string(expert))
        << expert << " on " << rank;
  }
}

// ValidatePlan checks a plan's assignments on arrays (walked in place when canonical, grouped by
// source otherwise) and falls back to the hashed check for the error: all must call the same
// plans valid. Valid plans of every planner, each broken in one
// random way (a field moved, tokens raised, an entry repeated or dropped), against the oracle.
TEST(ValidatePlanTest, CallsValidExactlyThePlansThatKeepTheRules) {
  std::mt19937_64 rng(11);
  int valid = 0, invalid = 0;
  for (const std::string& name : PlannerRegistry::BuiltIn().names()) {
    for (uint64_t seed = 1; seed <= 4; ++seed) {
      const PlanRequest request = testing::RandomRequest(16, 64, 2, seed);
      auto planner = PlannerRegistry::BuiltIn().Create(name).value();
      if (planner->comparison_only()) continue;
      const Plan plan = planner->MakePlan(request).value();
      if (plan.assignments.empty()) continue;
      for (int trial = 0; trial < 40; ++trial) {
        Plan broken = plan;
        Assignment& a = broken.assignments[rng() % broken.assignments.size()];
        switch (trial % 7) {
          case 0:
            a.rank = static_cast<int32_t>(rng() % 17) - (trial % 2);
            break;  // maybe no replica, maybe -1
          case 1:
            a.expert = static_cast<int32_t>(rng() % 64);
            break;  // maybe not held there
          case 2:
            a.tokens += static_cast<int64_t>(rng() % 3) * 500;
            break;  // maybe more than routed
          case 3:
            broken.assignments.push_back(a);
            break;  // an entry twice
          case 4:
            a.source = static_cast<int32_t>(rng() % 18) - 1;
            break;  // maybe out of range
          case 5:
            a.tokens = static_cast<int64_t>(rng() % 2);
            break;  // maybe 0
          case 6:
            broken.assignments.erase(broken.assignments.begin());
            break;  // still valid
        }
        const bool keeps = AssignmentsKeepTheRules(request, broken);
        EXPECT_EQ(ValidatePlan(request, broken).ok(), keeps) << name << " seed " << seed << " trial " << trial;
        // Made canonical (as RunPlanner checks it), it is walked in place: the same answer.
        Plan canonical = broken;
        Canonicalize(canonical);
        EXPECT_EQ(ValidatePlan(request, canonical).ok(), keeps) << name << " seed " << seed << " trial " << trial;
        (keeps ? valid : invalid) += 1;
      }
    }
  }
  EXPECT_GT(valid, 50);
  EXPECT_GT(invalid, 100);
}

// CanonicalizeAndValidate against its definition, Canonicalize then ValidatePlan (then PlanHash):
// the same plan after, bit for bit, the same status, message included, and the same hash. Every planner's plans, whole
// (in a planner's order, and canonical already) and broken one way each: an assignment's field moved (out of range
// too), tokens raised, an entry repeated, a replica dropped, repeated, moved home or out of range, the replicas out of
// order, and more replicas on a rank than it has slots.
TEST(CanonicalizeAndValidateTest, IsCanonicalizeThenValidatePlan) {
  std::mt19937_64 rng(5);
  int valid = 0, invalid = 0, reordered = 0;
  for (const std::string& name : PlannerRegistry::BuiltIn().names()) {
    for (uint64_t seed = 1; seed <= 3; ++seed) {
      const PlanRequest request = testing::RandomRequest(16, 64, 2, seed);
      auto planner = PlannerRegistry::BuiltIn().Create(name).value();
      const SlotLimit limit = planner->comparison_only() ? SlotLimit::kLifted : SlotLimit::kEnforced;
      const Plan plan = planner->MakePlan(request).value();
      for (int trial = 0; trial < 30; ++trial) {
        Plan broken = plan;
        if (trial >= 2 && !broken.assignments.empty()) {
          Assignment& a = broken.assignments[rng() % broken.assignments.size()];
          switch (trial % 9) {
            case 0:
              a.rank = static_cast<int32_t>(rng() % 17) - (trial % 2);
              break;
            case 1:
              a.source = static_cast<int32_t>(rng() % 18) - 1;
              break;
            case 2:
              a.tokens += static_cast<int64_t>(rng() % 3) * 500;
              break;
            case 3:
              broken.assignments.push_back(a);
              break;
            case 4:
              a.expert = static_cast<int32_t>(rng() % 66) - 1;
              break;
            default:
              break;
          }
        }
        if (!broken.replicas.empty()) {
          Replica& r = broken.replicas[rng() % broken.replicas.size()];
          switch (trial % 9) {
            case 5:
              broken.replicas.push_back(r);
              break;
            case 6:
              r.rank = trial % 2 == 0 ? request.home_of(r.expert) : 16;
              break;
            case 7:
              std::swap(broken.replicas.front(), broken.replicas.back());
              break;
            case 8:
              if (trial % 2 == 0) {
                broken.replicas.erase(broken.replicas.begin() +
                                      static_cast<std::ptrdiff_t>(rng() % broken.replicas.size()));
              } else {
                // More replicas on r's rank than it has slots: experts it does not hold, homed elsewhere.
                const int rank = r.rank;
                for (int e = 0, added = 0; e < request.experts() && added < request.slots_per_rank(); ++e) {
                  const Replica extra{e, rank};
                  if (request.home_of(e) != rank &&
                      std::find(broken.replicas.begin(), broken.replicas.end(), extra) == broken.replicas.end()) {
                    broken.replicas.push_back(extra);
                    ++added;
                  }
                }
              }
              break;
            default:
              break;
          }
        }
        if (trial == 1) Canonicalize(broken);  // walked in place, with no sort
        Plan expected = broken;
        Canonicalize(expected);
        const absl::Status want = ValidatePlan(request, expected, limit);
        Plan got = broken;
        const absl::Status status = CanonicalizeAndValidate(request, got, limit);
        EXPECT_EQ(status, want) << name << " seed " << seed << " trial " << trial;
        EXPECT_EQ(got, expected) << name << " seed " << seed << " trial " << trial;
        // Hashed in its walk: PlanHash's value where the plan is valid, nothing written where not.
        Plan hashed = broken;
        uint64_t hash = 7;
        EXPECT_EQ(CanonicalizeAndValidate(request, hashed, limit, &hash), want) << name << " trial " << trial;
        EXPECT_EQ(hashed, expected) << name << " seed " << seed << " trial " << trial;
        EXPECT_EQ(hash, want.ok() ? PlanHash(expected) : 7) << name << " seed " << seed << " trial " << trial;
        (want.ok() ? valid : invalid) += 1;
        reordered += !(broken == expected);
      }
    }
  }
  EXPECT_GT(valid, 50);
  EXPECT_GT(invalid, 150);
  EXPECT_GT(reordered, 100) << "most plans must need sorting";
}

// Each field is hashed with the width of its widest value over the whole plan, which the check's
// pass over the entries finds before it sorts them: wherever that value is (the first entry, one
// in the middle, the last, in the planner's order and in canonical order), the hash is PlanHash's.
TEST(CanonicalizeAndValidateTest, HashesEachFieldAtItsWidestValueWhereverItIs) {
  // 300 ranks (a source and a rank of two bytes), 600 experts (two bytes), every source routes
  // 3 tokens to each expert and source 299 routes 70,000 (three bytes) to expert 599. Expert 7
  // also has a replica on rank 290 (two bytes), which source 6 sends to.
  std::vector<std::vector<int64_t>> rows(300, std::vector<int64_t>(600, 3));
  rows[299][599] = 70000;
  const PlanRequest request = testing::MakeRequest(300, 600, 3, rows);
  // Expert e lives on rank e / 2; its replica on rank 0 (expert 599's too).
  for (const int wide_at : {0, 3, 7}) {
    Plan plan;
    plan.replicas = {{4, 0}, {7, 0}, {7, 290}};
    const std::vector<Assignment> narrow = {{1, 4, 0, 2}, {5, 7, 0, 3},   {2, 4, 0, 1}, {9, 7, 0, 3},
                                            {8, 4, 0, 3}, {6, 7, 290, 2}, {3, 7, 0, 2}};
    plan.assignments = narrow;
    const Assignment wide{299, 599, 0, 70000};
    plan.replicas.push_back({599, 0});
    plan.assignments.insert(plan.assignments.begin() + wide_at, wide);
    Plan expected = plan;
    Canonicalize(expected);
    ASSERT_TRUE(ValidatePlan(request, expected).ok()) << ValidatePlan(request, expected).message();
    uint64_t hash = 0;
    ASSERT_TRUE(CanonicalizeAndValidate(request, plan, SlotLimit::kEnforced, &hash).ok());
    EXPECT_EQ(hash, PlanHash(expected)) << "the wide entry at " << wide_at;
    // And where the plan comes canonical already.
    uint64_t again = 0;
    ASSERT_TRUE(CanonicalizeAndValidate(request, expected, SlotLimit::kEnforced, &again).ok());
    EXPECT_EQ(again, PlanHash(expected));
  }
}

}  // namespace
}  // namespace taot

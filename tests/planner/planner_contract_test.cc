// The checks every planner must pass, over the rows each test binary gives (planner_contract.h).
#include "planner_contract.h"

#include <algorithm>

#include "taot/planner/load_stats.h"
#include "taot/planner/plan_hash.h"
#include "test_requests.h"

namespace taot {

std::vector<PlannerRow> BuiltInPlannerRows() {
  std::vector<PlannerRow> rows;
  for (std::string& name : PlannerRegistry::BuiltIn().names()) rows.push_back({std::move(name)});
  return rows;
}

void PrintTo(const PlannerRow& row, std::ostream* os) { *os << ::testing::PrintToString(row.name); }

std::string PlannerRowName(const ::testing::TestParamInfo<PlannerRow>& info) {
  std::string name = info.param.name;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

std::unique_ptr<Planner> PlannerTest::NewPlanner() const {
  return GetParam().registry().Create(GetParam().name).value();
}

ScoredPlan PlannerTest::Run(const PlanRequest& request) const {
  auto planner = NewPlanner();
  absl::StatusOr<ScoredPlan> out = RunPlanner(*planner, request);
  EXPECT_TRUE(out.ok()) << GetParam().name << ": " << out.status().message();
  return out.ok() ? *out : ScoredPlan{};
}

namespace {

using testing::MakeRequest;
using testing::RandomRequest;

TEST_P(PlannerTest, ValidOnRandomSkewedCases) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    for (auto [ranks, experts] : {std::pair{8, 32}, {16, 64}, {24, 48}}) {
      const ScoredPlan out = Run(RandomRequest(ranks, experts, 2, seed));
      EXPECT_LE(out.score.imbalance_after_pct, out.score.imbalance_before_pct + 1e-9) << GetParam().name;
    }
  }
}

TEST_P(PlannerTest, SameInputSamePlanBitForBit) {
  const PlanRequest request = RandomRequest(32, 128, 2, 5);
  auto planner = NewPlanner();
  const Plan first = planner->MakePlan(request).value();
  const Plan again = planner->MakePlan(request).value();  // same instance, reused scratch
  const Plan fresh = NewPlanner()->MakePlan(request).value();
  EXPECT_EQ(first, again);
  EXPECT_EQ(first, fresh);
}

// One instance that planned layers of other shapes in between (more and fewer ranks, experts
// and slots, other nodes, resident replicas) plans what a new instance plans: nothing a plan
// leaves in the planner's scratch (sized for the largest shape, laid out for the last) reaches
// the next.
TEST_P(PlannerTest, AKeptPlannerPlansAsANewOneDoes) {
  std::vector<PlanRequest> requests;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    requests.push_back(RandomRequest(32, 128, 2, seed));
    requests.push_back(RandomRequest(8, 16, 1, seed, /*ranks_per_node=*/4));
    requests.push_back(RandomRequest(24, 96, 4, seed, /*ranks_per_node=*/6));
  }
  requests[3].resident = {{5, 20}, {40, 3}};
  auto kept = NewPlanner();
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < requests.size(); ++i) {
      const absl::StatusOr<Plan> reused = kept->MakePlan(requests[i]);
      const absl::StatusOr<Plan> fresh = NewPlanner()->MakePlan(requests[i]);
      ASSERT_EQ(reused.ok(), fresh.ok()) << GetParam().name << " request " << i;
      if (reused.ok()) {
        EXPECT_EQ(*reused, *fresh) << GetParam().name << " request " << i << ", round " << round;
      } else {
        EXPECT_EQ(reused.status(), fresh.status()) << GetParam().name << " request " << i;
      }
    }
  }
}

// The layers of a microbatch planned together (the daemon's batches, a device's one launch)
// get the plans they get one by one; a request that is not valid gets its own error and leaves
// the others' plans alone.
TEST_P(PlannerTest, ABatchPlansWhatEachRequestPlansAlone) {
  std::vector<PlanRequest> requests;
  for (uint64_t seed = 1; seed <= 4; ++seed) requests.push_back(RandomRequest(16, 64, 2, seed));
  requests[2].resident = {{3, 9}, {40, 1}};
  PlanRequest invalid = RandomRequest(16, 64, 2, 7);
  invalid.load.row(3)[5] = -1;
  requests.insert(requests.begin() + 1, invalid);
  std::vector<const PlanRequest*> batch;
  for (const PlanRequest& r : requests) batch.push_back(&r);
  auto planner = NewPlanner();
  const std::vector<absl::StatusOr<ScoredPlan>> together = RunPlannerBatch(*planner, batch);
  ASSERT_EQ(together.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const absl::StatusOr<ScoredPlan> alone = RunPlanner(*NewPlanner(), requests[i]);
    ASSERT_EQ(together[i].status(), alone.status()) << GetParam().name << " request " << i;
    if (alone.ok()) {
      EXPECT_EQ(together[i]->plan, alone->plan) << GetParam().name << " request " << i;
    }
  }
  EXPECT_FALSE(together[1].ok());
}

// A caller that has summed the experts already (RunPlanner's validation pass) gets MakePlan's
// plan, from the same instance in turn with MakePlan (scratch shared between the two) and from a
// fresh one.
TEST_P(PlannerTest, GivenTheExpertsTotalsPlansWhatMakePlanPlans) {
  auto planner = NewPlanner();
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    PlanRequest request = RandomRequest(8 << (seed % 3), 64, 2, seed);  // 8, 16 or 32 ranks
    if (seed == 2) request.resident = {{3, 9}, {40, 1}};
    if (seed == 4) request.target_imbalance_pct = 0;
    const std::vector<int64_t> totals = ExpertTotals(request);
    const absl::StatusOr<Plan> given = planner->MakePlanWithTotals(request, totals);
    const absl::StatusOr<Plan> alone = planner->MakePlan(request);
    const absl::StatusOr<Plan> fresh = NewPlanner()->MakePlanWithTotals(request, totals);
    ASSERT_TRUE(given.ok() && alone.ok() && fresh.ok()) << GetParam().name << " seed " << seed;
    EXPECT_EQ(*given, *alone) << GetParam().name << " seed " << seed;
    EXPECT_EQ(*fresh, *alone) << GetParam().name << " seed " << seed;
  }
}

// A batch with the experts' totals (the daemon's RunPlannerBatch) gets, layer by layer, what
// MakePlan gives each layer alone.
TEST_P(PlannerTest, ABatchWithTheTotalsPlansWhatMakePlanPlans) {
  std::vector<PlanRequest> requests;
  for (uint64_t seed = 1; seed <= 4; ++seed) requests.push_back(RandomRequest(8 << (seed % 3), 64, 2, seed));
  requests[1].resident = {{3, 9}, {40, 1}};
  std::vector<const PlanRequest*> batch;
  std::vector<std::vector<int64_t>> totals;
  for (const PlanRequest& r : requests) {
    batch.push_back(&r);
    totals.push_back(ExpertTotals(r));
  }
  const std::vector<absl::StatusOr<Plan>> plans = NewPlanner()->MakePlansWithTotals(batch, totals);
  ASSERT_EQ(plans.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const absl::StatusOr<Plan> alone = NewPlanner()->MakePlan(requests[i]);
    ASSERT_TRUE(plans[i].ok() && alone.ok()) << GetParam().name << " layer " << i;
    EXPECT_EQ(*plans[i], *alone) << GetParam().name << " layer " << i;
  }
}

// Local planning's stage without the scorecard: RunPlanner's plan and RunPlanner's errors. Both
// hash the plan in their check's walk: PlanHash's value.
TEST_P(PlannerTest, CheckedPlanIsRunPlannersPlanWithoutTheScore) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    PlanRequest request = RandomRequest(16, 64, 2, seed);
    if (seed == 3) request.load.row(2)[7] = -4;
    if (seed == 4) request.resident = {{3, 9}, {40, 1}};
    const absl::StatusOr<ScoredPlan> run = RunPlanner(*NewPlanner(), request);
    uint64_t hash = 0;
    const absl::StatusOr<Plan> checked = CheckedPlan(*NewPlanner(), request, &hash);
    ASSERT_EQ(checked.status(), run.status()) << GetParam().name << " seed " << seed;
    EXPECT_EQ(CheckedPlan(*NewPlanner(), request).status(), run.status()) << GetParam().name << " seed " << seed;
    if (run.ok()) {
      EXPECT_EQ(*checked, run->plan) << GetParam().name << " seed " << seed;
      EXPECT_EQ(hash, PlanHash(run->plan)) << GetParam().name << " seed " << seed;
      EXPECT_EQ(run->hash, PlanHash(run->plan)) << GetParam().name << " seed " << seed;
    }
  }
}

TEST_P(PlannerTest, ResidentListOrderDoesNotMatter) {
  PlanRequest a = RandomRequest(16, 64, 2, 9);
  a.resident = {{0, 5}, {9, 3}, {20, 12}, {33, 1}};
  PlanRequest b = a;
  std::reverse(b.resident.begin(), b.resident.end());
  EXPECT_EQ(Run(a).plan, Run(b).plan);
}

TEST_P(PlannerTest, AllTokensOnOneExpert) {
  std::vector<std::vector<int64_t>> rows(16, std::vector<int64_t>(64, 0));
  for (auto& row : rows) row[5] = 1000;
  const ScoredPlan out = Run(MakeRequest(16, 64, 2, rows));
  EXPECT_GE(out.score.imbalance_before_pct, 1499.0);
}

TEST_P(PlannerTest, ZeroLoad) {
  const ScoredPlan out = Run(MakeRequest(8, 16, 2, {}));
  EXPECT_DOUBLE_EQ(out.score.imbalance_after_pct, 0.0);
}

TEST_P(PlannerTest, OneNode) { Run(RandomRequest(8, 32, 2, 3, /*ranks_per_node=*/8)); }

TEST_P(PlannerTest, RanksNotAMultipleOfEight) {
  Run(RandomRequest(12, 48, 2, 4));
  Run(RandomRequest(20, 40, 1, 5));
  Run(RandomRequest(5, 5, 3, 6, /*ranks_per_node=*/2));
}

TEST_P(PlannerTest, NoSlots) {
  const ScoredPlan out = Run(RandomRequest(16, 64, 0, 7));
  // A comparison-only planner may re-pack experts whatever K is (EPLB with K = 0 still moves
  // whole experts between ranks); every other planner has nowhere to put a replica.
  if (NewPlanner()->comparison_only()) {
    EXPECT_LE(out.score.imbalance_after_pct, out.score.imbalance_before_pct);
    return;
  }
  EXPECT_TRUE(out.plan.replicas.empty());
  EXPECT_DOUBLE_EQ(out.score.imbalance_after_pct, out.score.imbalance_before_pct);
}

TEST_P(PlannerTest, RunnableUnlessComparisonOnly) {
  const bool comparison_only = NewPlanner()->comparison_only();
  const auto runnable = GetParam().registry().CreateRunnable(GetParam().name);
  EXPECT_EQ(runnable.ok(), !comparison_only) << runnable.status();
  if (comparison_only) {
    EXPECT_EQ(runnable.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(runnable.status().message().find("comparison only"), std::string::npos) << runnable.status();
  }
}

TEST_P(PlannerTest, MoreSlotsThanUseful) { Run(RandomRequest(8, 16, 16, 8)); }

TEST_P(PlannerTest, OneRank) { Run(RandomRequest(1, 4, 2, 2)); }

TEST_P(PlannerTest, GeneralCostMatrix) {
  PlanRequest request = RandomRequest(6, 12, 2, 10);
  std::vector<double> cost(36);
  for (int a = 0; a < 6; ++a) {
    for (int b = 0; b < 6; ++b) cost[a * 6 + b] = a == b ? 0.0 : 1.0 + (a * 7 + b * 3) % 5;
  }
  request = testing::Reshaped(request, [&](Problem& p) {
    p.topology = *Topology::FromMatrix({0, 0, 0, 1, 1, 1}, cost);
  });
  ASSERT_FALSE(request.topology().tree_costs().has_value());
  Run(request);
}

}  // namespace
}  // namespace taot

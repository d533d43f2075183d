// Properties of `taot` beyond what every planner must do: it meets its target whenever an
// exact search says the target is reachable, reuses resident replicas, and says when it misses.
#include <gtest/gtest.h>

#include <functional>
#include <iostream>
#include <limits>
#include <random>

#include "taot/planner/load_stats.h"
#include "taot/planner/registry.h"
#include "taot/planner/run_planner.h"
#include "taot/planner/solvers/max_flow.h"
#include "taot/sim/sequence_workload.h"
#include "test_requests.h"

namespace taot {
namespace {

ScoredPlan RunTaot(const PlanRequest& request) {
  auto planner = PlannerRegistry::BuiltIn().Create("taot").value();
  return RunPlanner(*planner, request).value();
}

// Whether the replicas let every rank end at or under `cap` (a max-flow feasibility test).
bool Fits(const PlanRequest& r, const std::vector<int64_t>& totals, const std::vector<Replica>& replicas, int64_t cap) {
  const int E = r.experts(), R = r.ranks();
  MaxFlow flow(E + R + 2);
  const int source = E + R, sink = E + R + 1;
  int64_t total = 0;
  for (int e = 0; e < E; ++e) {
    flow.AddEdge(source, e, totals[e]);
    flow.AddEdge(e, E + r.home_of(e), totals[e]);
    total += totals[e];
  }
  for (const Replica& rep : replicas) flow.AddEdge(rep.expert, E + rep.rank, totals[rep.expert]);
  for (int k = 0; k < R; ++k) flow.AddEdge(E + k, sink, cap);
  return flow.Solve(source, sink) == total;
}

// The cheapest replica set (K = 1) that meets the cap, by enumeration of every set; infinity if
// none does. With `direct_only`, only an expert of a rank above the cap onto a rank below it.
double ExactCost(const PlanRequest& r, int64_t cap, bool direct_only) {
  const std::vector<int64_t> totals = ExpertTotals(r);
  const std::vector<int64_t> loads = RankLoadsBefore(r);
  std::vector<Replica> chosen;
  double best = std::numeric_limits<double>::infinity();
  std::function<void(int, double)> go = [&](int rank, double cost) {
    if (cost >= best) return;
    if (rank == r.ranks()) {
      if (Fits(r, totals, chosen, cap)) best = cost;
      return;
    }
    go(rank + 1, cost);
    if (direct_only && loads[rank] >= cap) return;
    for (int e = 0; e < r.experts(); ++e) {
      if (r.home_of(e) == rank || (direct_only && loads[r.home_of(e)] <= cap)) continue;
      chosen.push_back({e, rank});
      go(rank + 1, cost + r.topology().cost(r.home_of(e), rank));
      chosen.pop_back();
    }
  };
  go(0, 0.0);
  return best;
}

TEST(TaotTest, MeetsTheTargetWheneverDirectReplicasCanAndNeverBeatsTheOptimum) {
  std::mt19937_64 rng(2024);
  int reachable = 0, chains_only = 0;
  double taot_cost = 0, exact_cost = 0;
  for (int round = 0; round < 60; ++round) {
    PlanRequest r = testing::RandomRequest(4, 8, 1, rng(), /*ranks_per_node=*/2);
    r.target_imbalance_pct = static_cast<double>(rng() % 11);
    const std::vector<int64_t> loads = RankLoadsBefore(r);
    int64_t total = 0;
    for (int64_t l : loads) total += l;
    const int64_t cap = LoadCap(total, r.ranks(), *r.target_imbalance_pct);
    const double exact = ExactCost(r, cap, /*direct_only=*/false);
    const double direct = ExactCost(r, cap, /*direct_only=*/true);
    const ScoredPlan out = RunTaot(r);
    EXPECT_EQ(out.plan.target_missed, !out.score.target_met) << "round " << round;
    if (out.score.target_met) {
      EXPECT_GE(out.score.weighted_cost, exact) << "round " << round;
    }
    if (direct == std::numeric_limits<double>::infinity()) {
      chains_only += exact != std::numeric_limits<double>::infinity();
      continue;
    }
    ++reachable;
    EXPECT_TRUE(out.score.target_met) << "round " << round;
    taot_cost += out.score.weighted_cost;
    exact_cost += exact;
  }
  EXPECT_GT(reachable, 20);
  // A guard against regressions, not a bound the method promises: these 4-rank, one-slot cases
  // are where chains matter most (measured 1.15x the true optimum).
  EXPECT_LE(taot_cost, 1.20 * exact_cost);
  std::cout << reachable << " reachable with direct replicas, " << chains_only
            << " only with chains; taot / optimum = " << taot_cost / exact_cost << "\n";
}

TEST(TaotTest, ReusesAResidentReplicaForFree) {
  PlanRequest r = testing::MakeRequest(4, 4, 1, {{100, 10, 10, 10}, {100, 10, 10, 10}}, /*ranks_per_node=*/2);
  const ScoredPlan fresh = RunTaot(r);
  EXPECT_GT(fresh.score.weighted_cost, 0);
  // Put the replica taot would build, or any useful one, there already.
  r.resident = {{0, 3}};
  const ScoredPlan reused = RunTaot(r);
  EXPECT_EQ(reused.score.reused_replicas, 1);
  EXPECT_LT(reused.score.weighted_cost, fresh.score.weighted_cost + 3);
  EXPECT_TRUE(reused.score.target_met);
}

TEST(TaotTest, DropsAResidentReplicaItDoesNotNeed) {
  PlanRequest r = testing::MakeRequest(4, 4, 1, {{10, 10, 10, 10}}, /*ranks_per_node=*/2);
  r.resident = {{1, 2}};
  const ScoredPlan out = RunTaot(r);
  EXPECT_TRUE(out.plan.replicas.empty());
}

TEST(TaotTest, SaysWhenTheTargetIsOutOfReachAndGetsAsCloseAsItCan) {
  // Rank 0 holds three experts of 100 tokens; rank 1's single slot takes at most one of them,
  // so the best reachable is 200 / 100, not the 150 / 150 a 0% target asks for.
  PlanRequest r = testing::MakeRequest(2, 6, 1, {{100, 100, 100, 0, 0, 0}});
  r.target_imbalance_pct = 0;
  const ScoredPlan out = RunTaot(r);
  EXPECT_TRUE(out.plan.target_missed);
  EXPECT_FALSE(out.score.target_met);
  EXPECT_NEAR(out.score.imbalance_after_pct, 100.0 * (200.0 - 150.0) / 150.0, 1e-9);
  r = testing::Reshaped(r, [](Problem& p) { p.slots_per_rank = 0; });
  const ScoredPlan none = RunTaot(r);
  EXPECT_TRUE(none.plan.target_missed);
  EXPECT_DOUBLE_EQ(none.score.imbalance_after_pct, 100.0);
}

TEST(TaotTest, HigherTargetsCostLess) {
  const PlanRequest base = testing::RandomRequest(32, 128, 2, 77);
  double previous = std::numeric_limits<double>::infinity();
  for (double target : {0.0, 2.0, 5.0, 10.0, 20.0}) {
    PlanRequest r = base;
    r.target_imbalance_pct = target;
    const ScoredPlan out = RunTaot(r);
    EXPECT_TRUE(out.score.target_met) << target;
    EXPECT_LE(out.score.imbalance_after_pct, target + 1e-9 + 100.0 / 1000);
    EXPECT_LE(out.score.weighted_cost, previous) << target;
    previous = out.score.weighted_cost;
  }
}

// A layer where the second node order reused more carriers than it had hot ranks (carriers
// handing a burst's expert off make other nodes' ranks hot in one order and not the other): the
// placement read past its list of hot ranks and looped forever. Found by taot-sim at EP64.
TEST(TaotTest, ReusedCarrierChoiceFitsTheHotRanksOfTheSecondOrder) {
  sim::SequenceOptions o;
  o.ranks = 64;
  o.layers = 39;
  absl::StatusOr<std::unique_ptr<sim::SequenceWorkload>> w = sim::SequenceWorkload::Create(o);
  ASSERT_TRUE(w.ok()) << w.status();
  PlanRequest request;
  request.problem = std::make_shared<const Problem>(Problem{*Topology::Uniform(64), 128, 2, 0});
  request.target_imbalance_pct = 0;
  request.load = (*w)->Load(2, 38, 0);
  auto planner = PlannerRegistry::BuiltIn().Create("taot");
  ASSERT_TRUE(planner.ok());
  absl::StatusOr<ScoredPlan> out = RunPlanner(**planner, request);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_TRUE(out->score.target_met);
}

}  // namespace
}  // namespace taot

#include "planners/token_split.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "planners/plan_building.h"
#include "taot/planner/solvers/min_cost_transport.h"
#include "test_requests.h"

namespace taot::planners {
namespace {

using testing::RandomRequest;

// Shares of a few kinds, each an expert's whole guest set: one guest with all the expert's
// tokens (the home keeps none), one or two guests with part of them, two guests with all.
std::vector<GuestShare> RandomShares(const PlanRequest& request, const std::vector<int64_t>& totals, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<GuestShare> shares;
  const int R = request.ranks();
  for (int e = 0; e < request.experts(); ++e) {
    const int kind = static_cast<int>(rng() % 5);  // 4: not replicated
    if (kind == 4) continue;
    const int home = request.home_of(e);
    const int a = (home + 1 + static_cast<int>(rng() % (R - 1))) % R;
    int b = (home + 1 + static_cast<int>(rng() % (R - 1))) % R;
    if (b == a) b = (b + 1) % R == home ? (b + 2) % R : (b + 1) % R;
    const int64_t total = totals[static_cast<size_t>(e)];
    const int64_t part = static_cast<int64_t>(rng() % static_cast<uint64_t>(total + 1));
    switch (kind) {
      case 0:
        shares.push_back({e, a, total});
        break;
      case 1:
        shares.push_back({e, a, part});
        break;
      case 2:
        shares.push_back({e, a, part / 2});
        shares.push_back({e, b, part - part / 2});
        break;
      default:
        shares.push_back({e, a, part});
        shares.push_back({e, b, total - part});
        break;
    }
  }
  std::shuffle(shares.begin(), shares.end(), rng);  // Append sorts them
  return shares;
}

// Every guest gets exactly its share from sources that have the tokens, and the dispatch cost
// (the home taking each source's rest) is the exact transport's, expert by expert.
void ExpectCheapestSplit(const PlanRequest& request, const std::vector<GuestShare>& shares, const Plan& plan) {
  const Topology& topo = request.topology();
  const int R = request.ranks();
  std::map<int, std::vector<int64_t>> demand;  // expert -> per rank
  for (const GuestShare& s : shares) {
    std::vector<int64_t>& d = demand.try_emplace(s.expert, static_cast<size_t>(R), 0).first->second;
    d[static_cast<size_t>(s.rank)] += s.tokens;
  }
  std::map<int, std::vector<int64_t>> sent;  // expert -> per source
  std::map<int, double> cost;
  for (const Assignment& a : plan.assignments) {
    ASSERT_GT(a.tokens, 0);
    ASSERT_NE(a.rank, request.home_of(a.expert)) << "the home's tokens are implicit";
    ASSERT_TRUE(demand.count(a.expert)) << "expert " << a.expert << " has no guest";
    demand[a.expert][static_cast<size_t>(a.rank)] -= a.tokens;
    std::vector<int64_t>& s = sent.try_emplace(a.expert, static_cast<size_t>(R), 0).first->second;
    s[static_cast<size_t>(a.source)] += a.tokens;
    cost[a.expert] += static_cast<double>(a.tokens) * topo.cost(a.source, a.rank);
  }
  std::vector<double> costs(static_cast<size_t>(R) * R);
  for (int s = 0; s < R; ++s) {
    for (int r = 0; r < R; ++r) costs[static_cast<size_t>(s) * R + r] = topo.cost(s, r);
  }
  for (auto& [e, d] : demand) {
    for (int r = 0; r < R; ++r) EXPECT_EQ(d[static_cast<size_t>(r)], 0) << "expert " << e << " guest " << r;
    std::vector<int64_t> supply(static_cast<size_t>(R)), full(static_cast<size_t>(R), 0);
    int64_t total = 0;
    for (int s = 0; s < R; ++s) {
      supply[static_cast<size_t>(s)] = request.load.at(s, e);
      total += supply[static_cast<size_t>(s)];
      const int64_t out = sent.count(e) ? sent[e][static_cast<size_t>(s)] : 0;
      ASSERT_LE(out, supply[static_cast<size_t>(s)]) << "source " << s << " of expert " << e;
      cost[e] += static_cast<double>(supply[static_cast<size_t>(s)] - out) * topo.cost(s, request.home_of(e));
    }
    for (const GuestShare& g : shares) {
      if (g.expert == e) full[static_cast<size_t>(g.rank)] += g.tokens;
    }
    int64_t guests = 0;
    for (int64_t x : full) guests += x;
    full[static_cast<size_t>(request.home_of(e))] = total - guests;
    EXPECT_NEAR(cost[e], SolveMinCostTransport(supply, full, costs).cost, 1e-6) << "expert " << e;
  }
}

TEST(CheapestSplitTest, EachExpertsSplitIsTheExactTransportOnTreeAndOtherTopologies) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    PlanRequest tree = RandomRequest(16, 64, 2, seed, 4);
    // The same load on a topology with no tree: each pair's cost its own.
    PlanRequest matrix = testing::Reshaped(tree, [&](Problem& p) {
      std::vector<int> node_of_rank;
      std::vector<double> cost;
      for (int s = 0; s < 16; ++s) {
        node_of_rank.push_back(s / 4);
        for (int r = 0; r < 16; ++r) cost.push_back(s == r ? 0.0 : 1.0 + static_cast<double>((s * 7 + r * 3) % 5));
      }
      p.topology = *Topology::FromMatrix(node_of_rank, cost);
    });
    // The same load with some sources sending an expert nothing (a whole move then skips them).
    std::vector<std::vector<int64_t>> rows(16, std::vector<int64_t>(64));
    for (int s = 0; s < 16; ++s) {
      for (int e = 0; e < 64; ++e) rows[s][e] = (s * 5 + e + static_cast<int>(seed)) % 4 == 0 ? 0 : tree.load.at(s, e);
    }
    PlanRequest sparse = testing::MakeRequest(16, 64, 2, rows, 4);
    for (const PlanRequest* request : {&tree, &matrix, &sparse}) {
      const LoadSums sums = SumLoads(*request);
      const std::vector<GuestShare> shares = RandomShares(*request, sums.expert_totals, seed);
      std::vector<GuestShare> consumed = shares;
      CheapestSplit split;
      Plan plan;
      split.Append(*request, sums.expert_totals, consumed, plan);
      EXPECT_EQ(plan.replicas.size(), shares.size());
      ExpectCheapestSplit(*request, shares, plan);
      // A kept instance splits as a new one does.
      std::vector<GuestShare> again = shares;
      Plan second;
      split.Append(*request, sums.expert_totals, again, second);
      EXPECT_EQ(second.assignments, plan.assignments) << "seed " << seed;
    }
  }
}

}  // namespace
}  // namespace taot::planners

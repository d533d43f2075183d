#include "planners/token_split.h"

#include <algorithm>
#include <utility>

#include "taot/planner/solvers/min_cost_transport.h"
#include "taot/planner/solvers/tree_transport.h"

namespace taot::planners {

void CheapestSplit::SplitExpert(const PlanRequest& request, int expert, Plan& plan) {
  const Topology& topo = request.topology;
  const int R = request.ranks();
  const int home = request.home_of(expert);
  for (int s = 0; s < R; ++s) supply_[s] = request.load.at(s, expert);
  auto emit = [&](int from, int to, int64_t amount) {
    if (to != home) plan.assignments.push_back({from, expert, to, amount});
  };
  if (topo.tree_costs()) {
    std::sort(demand_ranks_.begin(), demand_ranks_.end(), [&](int a, int b) {
      return std::make_pair(topo.node_of(a), a) < std::make_pair(topo.node_of(b), b);
    });
    // Supply and demand balance (both are the expert's total): the home takes what the guests
    // leave. Supplies the scan did not reach are overwritten for the next expert.
    MatchOnTree(topo, supply_, demand_, demand_ranks_, emit, home);
    return;
  }
  std::vector<double> cost(static_cast<size_t>(R) * R);
  for (int s = 0; s < R; ++s) {
    for (int r = 0; r < R; ++r) cost[static_cast<size_t>(s) * R + r] = topo.cost(s, r);
  }
  for (const TransportFlow& f : SolveMinCostTransport(supply_, demand_, cost).flows) {
    emit(f.from, f.to, f.amount);
  }
  std::fill(demand_.begin(), demand_.end(), 0);
}

void CheapestSplit::Append(const PlanRequest& request, const std::vector<int64_t>& expert_totals,
                           std::vector<GuestShare> shares, Plan& plan) {
  std::sort(shares.begin(), shares.end(), [](const GuestShare& a, const GuestShare& b) {
    return a.expert != b.expert ? a.expert < b.expert : a.rank < b.rank;
  });
  supply_.assign(static_cast<size_t>(request.ranks()), 0);
  demand_.assign(static_cast<size_t>(request.ranks()), 0);
  plan.replicas.reserve(plan.replicas.size() + shares.size());
  // A guest typically draws on the sources of its own node and a few more.
  plan.assignments.reserve(plan.assignments.size() +
                           shares.size() * static_cast<size_t>(std::min(request.ranks(), 16)));
  for (size_t i = 0; i < shares.size();) {
    const int expert = shares[i].expert;
    size_t j = i;
    int64_t away = 0;
    demand_ranks_.clear();
    for (; j < shares.size() && shares[j].expert == expert; ++j) {
      plan.replicas.push_back({expert, shares[j].rank});
      demand_[shares[j].rank] = shares[j].tokens;
      away += shares[j].tokens;
      demand_ranks_.push_back(shares[j].rank);
    }
    if (away > 0) {
      demand_[request.home_of(expert)] = expert_totals[expert] - away;
      demand_ranks_.push_back(request.home_of(expert));
      SplitExpert(request, expert, plan);
    } else {
      for (size_t k = i; k < j; ++k) demand_[shares[k].rank] = 0;
    }
    i = j;
  }
}

}  // namespace taot::planners

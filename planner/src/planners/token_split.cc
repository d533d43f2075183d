#include "planners/token_split.h"

#include <algorithm>

#include "taot/planner/solvers/min_cost_transport.h"
#include "taot/planner/solvers/tree_transport.h"

namespace taot::planners {
namespace {

// Exact split of one expert over ranks: demand[r] tokens are computed on rank r.
TransportPlan SplitExpert(const PlanRequest& request, int expert,
                          const std::vector<int64_t>& demand) {
  const Topology& topo = request.topology;
  const int R = request.ranks();
  std::vector<int64_t> supply(static_cast<size_t>(R));
  for (int s = 0; s < R; ++s) supply[s] = request.load.at(s, expert);
  if (topo.tree_costs()) return SolveTreeTransport(topo, *topo.tree_costs(), supply, demand);
  std::vector<double> cost(static_cast<size_t>(R) * R);
  for (int s = 0; s < R; ++s) {
    for (int r = 0; r < R; ++r) cost[static_cast<size_t>(s) * R + r] = topo.cost(s, r);
  }
  return SolveMinCostTransport(supply, demand, cost);
}

}  // namespace

void AppendCheapestSplit(const PlanRequest& request, const std::vector<int64_t>& expert_totals,
                         const std::vector<GuestShare>& shares, Plan& plan) {
  std::vector<GuestShare> sorted = shares;
  std::sort(sorted.begin(), sorted.end(), [](const GuestShare& a, const GuestShare& b) {
    return a.expert != b.expert ? a.expert < b.expert : a.rank < b.rank;
  });
  std::vector<int64_t> demand(static_cast<size_t>(request.ranks()), 0);
  for (size_t i = 0; i < sorted.size();) {
    const int expert = sorted[i].expert;
    const int home = request.home_of(expert);
    size_t j = i;
    int64_t away = 0;
    for (; j < sorted.size() && sorted[j].expert == expert; ++j) {
      plan.replicas.push_back({expert, sorted[j].rank});
      demand[sorted[j].rank] = sorted[j].tokens;
      away += sorted[j].tokens;
    }
    if (away > 0) {
      demand[home] = expert_totals[expert] - away;
      for (const TransportFlow& f : SplitExpert(request, expert, demand).flows) {
        if (f.to != home) plan.assignments.push_back({f.from, expert, f.to, f.amount});
      }
    }
    for (size_t k = i; k < j; ++k) demand[sorted[k].rank] = 0;
    demand[home] = 0;
    i = j;
  }
}

}  // namespace taot::planners

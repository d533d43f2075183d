#include "taot/planner/solvers/tree_transport.h"

#include <vector>

namespace taot {

TransportPlan SolveTreeTransport(const Topology& topology, const TreeCosts& costs, std::span<const int64_t> supply,
                                 std::span<const int64_t> demand) {
  TransportPlan out;
  std::vector<int64_t> s(supply.begin(), supply.end());
  std::vector<int64_t> d(demand.begin(), demand.end());
  std::vector<int> demand_ranks;
  for (int n = 0; n < topology.nodes(); ++n) {
    for (int r : topology.ranks_of_node(n)) {
      if (d[r] > 0) demand_ranks.push_back(r);
    }
  }
  MatchOnTree(topology, s, d, demand_ranks, [&](int from, int to, int64_t amount) {
    out.flows.push_back({from, to, amount});
    const double unit = from == to ? 0.0 : topology.same_node(from, to) ? costs.intra : costs.inter;
    out.cost += unit * static_cast<double>(amount);
  });
  return out;
}

}  // namespace taot

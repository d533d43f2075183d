#include "planners/min_max_split.h"

#include <algorithm>
#include <map>

#include "taot/planner/solvers/max_flow.h"

namespace taot::planners {
namespace {

// The replicas grouped by expert, experts in increasing order.
struct ReplicaGroups {
  std::vector<int> experts;
  std::vector<std::vector<size_t>> members;  // indices into the replicas, per expert
};

ReplicaGroups GroupByExpert(const std::vector<Replica>& replicas) {
  std::map<int, std::vector<size_t>> by_expert;
  for (size_t i = 0; i < replicas.size(); ++i) by_expert[replicas[i].expert].push_back(i);
  ReplicaGroups groups;
  for (auto& [expert, members] : by_expert) {
    groups.experts.push_back(expert);
    groups.members.push_back(std::move(members));
  }
  return groups;
}

}  // namespace

std::vector<GuestShare> MinMaxShares(const PlanRequest& request, const LoadSums& sums,
                                     const std::vector<Replica>& replicas) {
  const ReplicaGroups groups = GroupByExpert(replicas);
  const int X = static_cast<int>(groups.experts.size());
  const int R = request.ranks();
  std::vector<int64_t> fixed_load = sums.rank_loads;
  for (int expert : groups.experts) fixed_load[request.home_of(expert)] -= sums.expert_totals[expert];
  // No limit below max(ceil(mean), the heaviest load nothing can move) is feasible.
  int64_t limit = std::max((sums.total + R - 1) / R, *std::max_element(fixed_load.begin(), fixed_load.end()));
  // The network: source -> replicated expert (its total) -> its home or a guest -> rank -> sink
  // (the limit minus the rank's unmovable load).
  const int source = X + R;
  const int sink = source + 1;
  MaxFlow flow(X + R + 2);
  int64_t need = 0;
  std::vector<int> guest_edge(replicas.size());
  for (int x = 0; x < X; ++x) {
    const int expert = groups.experts[x];
    const int64_t total = sums.expert_totals[expert];
    need += total;
    flow.AddEdge(source, x, total);
    flow.AddEdge(x, X + request.home_of(expert), total);
    for (size_t i : groups.members[x]) guest_edge[i] = flow.AddEdge(x, X + replicas[i].rank, total);
  }
  std::vector<int> sink_edge(static_cast<size_t>(R));
  for (int r = 0; r < R; ++r) sink_edge[r] = flow.AddEdge(X + r, sink, limit - fixed_load[r]);
  // Newton's method on the parametric cut: while the flow falls short, the k ranks on the source
  // side of a minimum cut are what limits it, and raising the limit by d adds at most k d to
  // that cut, so the least feasible limit is at least limit + ceil(shortfall / k). Every step
  // stays at or below the optimum and keeps the flow found so far.
  int64_t pushed = flow.Solve(source, sink);
  while (pushed < need) {
    int64_t k = 0;
    for (int r = 0; r < R; ++r) k += flow.OnSourceSide(X + r);
    const int64_t step = (need - pushed + k - 1) / k;
    limit += step;
    for (int r = 0; r < R; ++r) flow.AddCapacity(sink_edge[r], step);
    pushed += flow.Solve(source, sink);
  }
  std::vector<GuestShare> shares;
  shares.reserve(replicas.size());
  for (size_t i = 0; i < replicas.size(); ++i) {
    shares.push_back({replicas[i].expert, replicas[i].rank, flow.flow(guest_edge[i])});
  }
  return shares;
}

}  // namespace taot::planners

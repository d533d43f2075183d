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

// Whether the replicated experts' tokens fit with every rank at most `limit`; on success
// fills each replica's share.
bool Fits(const PlanRequest& request, const LoadSums& sums, const std::vector<Replica>& replicas,
          const ReplicaGroups& groups, const std::vector<int64_t>& fixed_load, int64_t limit,
          std::vector<int64_t>& share) {
  const int X = static_cast<int>(groups.experts.size());
  const int R = request.ranks();
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
  for (int r = 0; r < R; ++r) {
    if (fixed_load[r] > limit) return false;
    flow.AddEdge(X + r, sink, limit - fixed_load[r]);
  }
  if (flow.Solve(source, sink) < need) return false;
  share.resize(replicas.size());
  for (size_t i = 0; i < replicas.size(); ++i) share[i] = flow.flow(guest_edge[i]);
  return true;
}

}  // namespace

std::vector<GuestShare> MinMaxShares(const PlanRequest& request, const LoadSums& sums,
                                     const std::vector<Replica>& replicas) {
  const ReplicaGroups groups = GroupByExpert(replicas);
  std::vector<int64_t> fixed_load = sums.rank_loads;
  for (int expert : groups.experts) fixed_load[request.home_of(expert)] -= sums.expert_totals[expert];
  // The optimum lies in [ceil(mean), max load before]; the upper end is feasible with every
  // token at home (best's zeros), and the last feasible probe is the optimum.
  int64_t lo = (sums.total + request.ranks() - 1) / request.ranks();
  int64_t hi = *std::max_element(sums.rank_loads.begin(), sums.rank_loads.end());
  std::vector<int64_t> share, best(replicas.size(), 0);
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (Fits(request, sums, replicas, groups, fixed_load, mid, share)) {
      hi = mid;
      best = share;
    } else {
      lo = mid + 1;
    }
  }
  std::vector<GuestShare> shares;
  shares.reserve(replicas.size());
  for (size_t i = 0; i < replicas.size(); ++i) {
    shares.push_back({replicas[i].expert, replicas[i].rank, best[i]});
  }
  return shares;
}

}  // namespace taot::planners

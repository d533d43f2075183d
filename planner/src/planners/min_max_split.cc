#include "planners/min_max_split.h"

#include <algorithm>

namespace taot::planners {

void MinMaxSplitter::GroupByExpert(std::span<const Replica> replicas) {
  by_expert_.resize(replicas.size());
  for (size_t i = 0; i < replicas.size(); ++i) by_expert_[i] = i;
  std::sort(by_expert_.begin(), by_expert_.end(), [&](size_t a, size_t b) {
    return replicas[a].expert != replicas[b].expert ? replicas[a].expert < replicas[b].expert : a < b;
  });
  experts_.clear();
  for (size_t i : by_expert_) {
    if (experts_.empty() || experts_.back() != replicas[i].expert) experts_.push_back(replicas[i].expert);
  }
}

std::vector<GuestShare>& MinMaxSplitter::Shares(const PlanRequest& request, const LoadSums& sums,
                                                std::span<const Replica> replicas) {
  GroupByExpert(replicas);
  const int X = static_cast<int>(experts_.size());
  const int R = request.ranks();
  fixed_load_ = sums.rank_loads;
  for (int expert : experts_) fixed_load_[request.home_of(expert)] -= sums.expert_totals[expert];
  // No limit below max(ceil(mean), the heaviest load nothing can move) is feasible.
  int64_t limit = std::max((sums.total + R - 1) / R, *std::max_element(fixed_load_.begin(), fixed_load_.end()));
  // The network: source -> replicated expert (its total) -> its home or a guest -> rank -> sink
  // (the limit minus the rank's unmovable load).
  const int source = X + R;
  const int sink = source + 1;
  flow_.Reset(X + R + 2);
  int64_t need = 0;
  guest_edge_.resize(replicas.size());
  for (size_t at = 0, x = 0; x < experts_.size(); ++x) {
    const int expert = experts_[x];
    const int64_t total = sums.expert_totals[expert];
    need += total;
    flow_.AddEdge(source, static_cast<int>(x), total);
    flow_.AddEdge(static_cast<int>(x), X + request.home_of(expert), total);
    for (; at < by_expert_.size() && replicas[by_expert_[at]].expert == expert; ++at) {
      guest_edge_[by_expert_[at]] = flow_.AddEdge(static_cast<int>(x), X + replicas[by_expert_[at]].rank, total);
    }
  }
  sink_edge_.resize(static_cast<size_t>(R));
  for (int r = 0; r < R; ++r) sink_edge_[r] = flow_.AddEdge(X + r, sink, limit - fixed_load_[r]);
  // Newton's method on the parametric cut: while the flow falls short, the k ranks on the source
  // side of a minimum cut are what limits it, and raising the limit by d adds at most k d to
  // that cut, so the least feasible limit is at least limit + ceil(shortfall / k). Every step
  // stays at or below the optimum and keeps the flow found so far.
  int64_t pushed = flow_.Solve(source, sink);
  while (pushed < need) {
    int64_t k = 0;
    for (int r = 0; r < R; ++r) k += flow_.OnSourceSide(X + r);
    const int64_t step = (need - pushed + k - 1) / k;
    limit += step;
    for (int r = 0; r < R; ++r) flow_.AddCapacity(sink_edge_[r], step);
    pushed += flow_.Solve(source, sink);
  }
  shares_.clear();
  for (size_t i = 0; i < replicas.size(); ++i) {
    shares_.push_back({replicas[i].expert, replicas[i].rank, flow_.flow(guest_edge_[i])});
  }
  return shares_;
}

}  // namespace taot::planners

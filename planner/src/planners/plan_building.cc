#include "planners/plan_building.h"

#include <algorithm>
#include <map>

#include "taot/planner/load_stats.h"

namespace taot::planners {
namespace {

// The rest of `sums` from its expert totals.
void SumRankLoads(const PlanRequest& request, LoadSums& sums) {
  sums.rank_loads.assign(static_cast<size_t>(request.ranks()), 0);
  sums.total = 0;
  for (int e = 0; e < request.experts(); ++e) {
    sums.rank_loads[request.home_of(e)] += sums.expert_totals[e];
    sums.total += sums.expert_totals[e];
  }
}

}  // namespace

void SumLoads(const PlanRequest& request, LoadSums& sums) {
  ExpertTotals(request, sums.expert_totals);
  SumRankLoads(request, sums);
}

void SumLoads(const PlanRequest& request, std::span<const int64_t> expert_totals, LoadSums& sums) {
  sums.expert_totals.assign(expert_totals.begin(), expert_totals.end());
  SumRankLoads(request, sums);
}

LoadSums SumLoads(const PlanRequest& request) {
  LoadSums sums;
  SumLoads(request, sums);
  return sums;
}

void AppendSlicedShares(const PlanRequest& request, const std::vector<GuestShare>& shares, Plan& plan) {
  std::vector<GuestShare> by_rank = shares;
  std::stable_sort(by_rank.begin(), by_rank.end(),
                   [](const GuestShare& a, const GuestShare& b) { return a.rank < b.rank; });
  AppendSlicedSharesInOrder(request, by_rank, plan);
}

void AppendSlicedSharesInOrder(const PlanRequest& request, const std::vector<GuestShare>& shares, Plan& plan) {
  std::map<int, std::vector<GuestShare>> by_expert;
  for (const GuestShare& share : shares) {
    plan.replicas.push_back({share.expert, share.rank});
    if (share.tokens > 0) by_expert[share.expert].push_back(share);
  }
  for (const auto& [expert, guests] : by_expert) {
    int source = 0;
    int64_t left_in_source = request.load.at(0, expert);
    for (const GuestShare& guest : guests) {
      int64_t need = guest.tokens;
      while (need > 0) {
        while (left_in_source == 0) left_in_source = request.load.at(++source, expert);
        const int64_t take = std::min(need, left_in_source);
        plan.assignments.push_back({source, expert, guest.rank, take});
        need -= take;
        left_in_source -= take;
      }
    }
  }
}

}  // namespace taot::planners

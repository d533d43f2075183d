// Pieces shared by the planners: the sums they all start from, and turning "guest rank g
// computes n tokens of expert e" into per-source assignments.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "taot/planner/plan.h"
#include "taot/planner/plan_request.h"

namespace taot::planners {

// Sums every planner starts from.
struct LoadSums {
  std::vector<int64_t> expert_totals;  // per expert, over all sources
  std::vector<int64_t> rank_loads;     // per rank, before replication
  int64_t total = 0;
};
LoadSums SumLoads(const PlanRequest& request);
// The same into `sums`, reusing its memory (a planner that keeps its sums between plans).
void SumLoads(const PlanRequest& request, LoadSums& sums);
// The same from the experts' totals already summed (ExpertTotals), without reading the load.
void SumLoads(const PlanRequest& request, std::span<const int64_t> expert_totals, LoadSums& sums);

// Guest rank `rank` computes `tokens` tokens of `expert` (tokens may be 0: the replica is
// placed but idle).
struct GuestShare {
  int expert = 0;
  int rank = 0;
  int64_t tokens = 0;
};

// Adds the replicas of `shares` to the plan and splits each expert's guest tokens over its
// sources the way a naive dispatcher slices a token array: the expert's tokens laid out source
// by source, guests in rank order taking consecutive slices from the start, the home keeping
// the rest. Topology-agnostic, as the peers are. Shares of one expert must not exceed its total.
void AppendSlicedShares(const PlanRequest& request, const std::vector<GuestShare>& shares, Plan& plan);

// The same, except that each expert's guests take their slices in the order `shares` lists them.
void AppendSlicedSharesInOrder(const PlanRequest& request, const std::vector<GuestShare>& shares, Plan& plan);

}  // namespace taot::planners

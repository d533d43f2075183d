// The token level of `taot`: which sources send how many tokens to each replica.
#pragma once

#include <span>
#include <vector>

#include "planners/plan_building.h"
#include "taot/planner/plan.h"
#include "taot/planner/plan_request.h"

namespace taot::planners {

// Adds the replicas of `shares` to a plan, and for every expert splits its tokens between its
// home and its guests (each guest computing exactly its share) so that the dispatch cost is
// minimal: each token pays the topology's cost from its source rank to the rank that computes
// it (0 when that is the source itself). Per expert this is a transport problem from sources
// to the home and the guests, solved exactly in whole tokens (MatchOnTree on a two-level
// topology, SolveMinCostTransport otherwise). Keeps its buffers between calls. `shares` is
// sorted in place (by expert, then rank): the caller's buffer, not a copy.
class CheapestSplit {
 public:
  void Append(const PlanRequest& request, const std::vector<int64_t>& expert_totals, std::vector<GuestShare>& shares,
              Plan& plan);

 private:
  // Splits one expert's tokens; `column` holds its load per source and is consumed.
  void SplitExpert(const PlanRequest& request, int expert, std::span<int64_t> column, Plan& plan);
  // An expert whose home keeps none of its tokens and that has one guest: every source sends
  // all it has to that guest, the one transport there is, on any topology, with no matching
  // (on bursts, most of the plan: 70-76% of the assignments of EP64 3 hot x30 and EP256 32 hot
  // x10 plans).
  static void MoveWhole(int expert, int guest, std::span<const int64_t> column, Plan& plan);

  std::vector<int64_t> demand_;
  std::vector<int> split_experts_;  // experts with tokens away from home, increasing
  std::vector<int64_t> columns_;    // their load columns, one after the other
  std::vector<int> demand_ranks_;   // the expert's home and guests, in (node, rank) order
};

}  // namespace taot::planners

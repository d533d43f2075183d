// The token level of `taot`: which sources send how many tokens to each replica.
#pragma once

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
// topology, SolveMinCostTransport otherwise). Keeps its buffers between calls.
class CheapestSplit {
 public:
  void Append(const PlanRequest& request, const std::vector<int64_t>& expert_totals,
              std::vector<GuestShare> shares, Plan& plan);

 private:
  void SplitExpert(const PlanRequest& request, int expert, Plan& plan);

  std::vector<int64_t> supply_, demand_;
  std::vector<int> demand_ranks_;  // the expert's home and guests, in (node, rank) order
};

}  // namespace taot::planners

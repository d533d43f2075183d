// The token level of `taot`: which sources send how many tokens to each replica.
#pragma once

#include <vector>

#include "planners/plan_building.h"
#include "taot/planner/plan.h"
#include "taot/planner/plan_request.h"

namespace taot::planners {

// Adds the replicas of `shares` to the plan, and for every expert splits its tokens between
// its home and its guests (each guest computing exactly its share) so that the dispatch cost is
// minimal: each token pays the topology's cost from its source rank to the rank that computes
// it (0 when that is the source itself). Per expert this is a transport problem from sources
// to the home and the guests, solved exactly (SolveTreeTransport on a two-level topology,
// SolveMinCostTransport otherwise), in whole tokens.
void AppendCheapestSplit(const PlanRequest& request, const std::vector<int64_t>& expert_totals,
                         const std::vector<GuestShare>& shares, Plan& plan);

}  // namespace taot::planners

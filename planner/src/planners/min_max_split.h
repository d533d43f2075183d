// The balancing half of a split over replicas fixed in advance: how many tokens of each
// replicated expert each of its guests computes so that the busiest rank is as light as
// possible. Shared by `lplb` (its LP) and SplitOverReplicas (the predictive mode's split).
#pragma once

#include <cstdint>
#include <vector>

#include "planners/plan_building.h"
#include "taot/planner/plan.h"
#include "taot/planner/plan_request.h"

namespace taot::planners {

// One share per replica (in the replicas' order), minimising the maximum rank load exactly in
// whole tokens: a parametric max flow (source -> replicated expert -> its home or a guest ->
// sink, the rank's edge the limit L minus its unreplicated load), raising L from a lower bound
// by Newton steps on the minimum cut until the flow carries every token. The LP "min L" of
// LPLB, solved without an LP.
// Replicas must be valid for the request (ValidateReplicas).
std::vector<GuestShare> MinMaxShares(const PlanRequest& request, const LoadSums& sums,
                                     const std::vector<Replica>& replicas);

}  // namespace taot::planners

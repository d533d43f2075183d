// The balancing half of a split over replicas fixed in advance: how many tokens of each
// replicated expert each of its guests computes so that the busiest rank is as light as
// possible. Shared by `lplb` (its LP) and SplitOverReplicas (the predictive mode's split).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "planners/plan_building.h"
#include "taot/planner/plan.h"
#include "taot/planner/plan_request.h"
#include "taot/planner/solvers/max_flow.h"

namespace taot::planners {

// One share per replica (in the replicas' order), minimising the maximum rank load exactly in
// whole tokens: a parametric max flow (source -> replicated expert -> its home or a guest ->
// sink, the rank's edge the limit L minus its unreplicated load), raising L from a lower bound
// by Newton steps on the minimum cut until the flow carries every token. The LP "min L" of
// LPLB, solved without an LP. Keeps its buffers between calls: the predictive mode's split runs
// at every layer, on the critical path.
class MinMaxSplitter {
 public:
  // Replicas must be valid for the request (ValidateReplicas). The shares live until the next call.
  std::vector<GuestShare>& Shares(const PlanRequest& request, const LoadSums& sums, std::span<const Replica> replicas);

 private:
  // Indices into the replicas, ordered by (expert, index); the experts they replicate, increasing.
  void GroupByExpert(std::span<const Replica> replicas);

  std::vector<size_t> by_expert_;
  std::vector<int> experts_;
  std::vector<int64_t> fixed_load_;
  std::vector<int> guest_edge_, sink_edge_;
  MaxFlow flow_;
  std::vector<GuestShare> shares_;
};

}  // namespace taot::planners

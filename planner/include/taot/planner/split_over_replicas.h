// Splitting a layer's tokens over replicas placed in advance. In the predictive mode the
// daemon places replicas from earlier steps' loads and the weights are prefetched; at the
// layer, each rank splits the actual (all-gathered) counts over those replicas with this
// function, so no planner call sits on the critical path. Deterministic: every rank computes
// the same split from the same counts.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "taot/planner/plan.h"
#include "taot/planner/plan_request.h"

namespace taot {

// A plan that uses exactly `replicas` (each listed, idle ones with no tokens): among the
// splits that minimise the maximum rank load, in whole tokens, the one whose dispatch is
// cheapest on the topology. request.resident is ignored (the replicas are what is resident);
// request.slots_per_rank() still bounds the replicas per rank. Errors name the bad replica.
absl::StatusOr<Plan> SplitOverReplicas(const PlanRequest& request, std::vector<Replica> replicas);

}  // namespace taot

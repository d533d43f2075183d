// Removing redundant replicas: pieces that form a cycle through ranks can trade tokens around it
// with every rank's load unchanged, until one of them carries nothing and goes.
#pragma once

#include <cstdint>
#include <vector>

#include "planners/plan_building.h"
#include "taot/planner/plan_request.h"

namespace taot::planners {

// Pieces are edges between a home rank and a guest rank. For every cycle of such edges there is
// an alternation of +δ and -δ along it that leaves every rank's load where it was; pushing δ to
// the smallest decreasing piece removes it (and its weight transfer) for free. Repeats while a
// cycle removes something, each time removing the most expensive piece it can (ties: the cycle
// found first); never lets an expert send more than its tokens. Deterministic.
// `resident` must be sorted (a resident replica costs nothing to keep).
void CancelCycles(const PlanRequest& request, const std::vector<int64_t>& expert_totals,
                  const std::vector<Replica>& resident, std::vector<GuestShare>& pieces);

}  // namespace taot::planners

// One evaluator for every planner, so that their figures compare.
#pragma once

#include <cstdint>
#include <span>

#include "taot/planner/plan.h"
#include "taot/planner/plan_request.h"

namespace taot {

struct Scorecard {
  double imbalance_before_pct = 0;
  double imbalance_after_pct = 0;
  // The target the plan was scored against, and whether the max rank load is within it
  // (LoadCap: rounded up to a whole token).
  double target_imbalance_pct = kDefaultTargetImbalancePct;
  bool target_met = false;
  // Replica weight transfers this plan needs (resident replicas it reuses move nothing).
  int intra_node_transfers = 0;
  int inter_node_transfers = 0;
  int reused_replicas = 0;
  // Sum of the topology's cost over the new transfers (intra + λ·inter on a uniform topology).
  double weighted_cost = 0;
  int64_t bytes_moved_intra_node = 0;
  int64_t bytes_moved_inter_node = 0;
  // Where every token of the layer is computed relative to its source rank.
  int64_t tokens_local = 0;
  int64_t tokens_intra_node = 0;
  int64_t tokens_inter_node = 0;
  // The time the caller gives Score: RunPlanner's is the planner's own (MakePlanWithTotals),
  // without I/O and validation. The simulator times the whole stage instead
  // (SimResult::plan_time_us).
  double plan_time_us = 0;
};

// Scores a valid plan (see ValidatePlan) for a valid request.
Scorecard Score(const PlanRequest& request, const Plan& plan, double plan_time_us);
// The same with each expert's total already summed (ExpertTotals(request); RunPlanner has them
// from its validation pass): the load matrix is then read only where the plan needs it.
Scorecard Score(const PlanRequest& request, const Plan& plan, double plan_time_us,
                std::span<const int64_t> expert_totals);

// The target the scorecard uses when the request sets none.
double EffectiveTarget(const PlanRequest& request);

}  // namespace taot

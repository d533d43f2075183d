// Per-rank and per-expert sums of a load matrix, imbalance, and the load cap a target implies.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "taot/planner/load_matrix.h"
#include "taot/planner/plan.h"
#include "taot/planner/plan_request.h"

namespace taot {

// Tokens of the whole layer: every entry of the load.
int64_t TotalTokens(const LoadMatrix& load);
// Tokens of each expert summed over all sources.
std::vector<int64_t> ExpertTotals(const PlanRequest& request);
// The same into `totals` (resized), reusing its memory: for a planner's scratch.
void ExpertTotals(const PlanRequest& request, std::vector<int64_t>& totals);
// Tokens each rank computes with no replication: the totals of its home experts.
std::vector<int64_t> RankLoadsBefore(const PlanRequest& request);
// The same from the experts' totals already summed (ExpertTotals).
std::vector<int64_t> HomeLoads(const PlanRequest& request, std::span<const int64_t> expert_totals);
// Tokens each rank computes under `plan` (home tokens not sent away, plus guest tokens).
std::vector<int64_t> RankLoadsAfter(const PlanRequest& request, const Plan& plan);
// Moves `plan`'s guest tokens in `rank_loads` from their experts' homes to their guests.
void MoveGuestTokens(const PlanRequest& request, const Plan& plan, std::span<int64_t> rank_loads);

// (max - mean) / mean x 100 over the rank loads; 0 when there is no load.
double ImbalancePct(std::span<const int64_t> rank_loads);

// The largest whole-token rank load that meets a target residual imbalance: the floor of
// mean x (1 + target/100), but never below the ceiling of the mean (no integer plan does
// better than that).
int64_t LoadCap(int64_t total_tokens, int ranks, double target_imbalance_pct);

}  // namespace taot

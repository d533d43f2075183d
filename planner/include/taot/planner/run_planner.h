// Runs a planner the way every caller should: validate, time, make the plan canonical, validate it,
// score.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "taot/planner/plan.h"
#include "taot/planner/plan_request.h"
#include "taot/planner/planner.h"
#include "taot/planner/scorecard.h"

namespace taot {

struct ScoredPlan {
  Plan plan;
  Scorecard score;
  uint64_t hash = 0;  // PlanHash(plan), made in the check's walk over it
};

// Validates the request (summing each expert's tokens in the same pass), times
// planner.MakePlanWithTotals with those sums (plan_time_us is the planner's own time), rejects
// an invalid plan with the validator's error, canonicalises it and scores it. For a
// comparison-only planner the slot limit is lifted, on the resident replicas and on the plan.
absl::StatusOr<ScoredPlan> RunPlanner(Planner& planner, const PlanRequest& request);

// RunPlanner without the scorecard, for a caller that uses only the plan: a trainer planning
// locally, on the critical path of every layer, where the score's passes over the load and the
// plan were a fifth of the stage (docs/performance.md, "The checks around a plan"). The same plan,
// canonical and checked. With `hash`, the plan's PlanHash goes there, made in the check's walk
// over the plan, where a pass of its own cost as much as the check (CanonicalizeAndValidate).
absl::StatusOr<Plan> CheckedPlan(Planner& planner, const PlanRequest& request, uint64_t* hash = nullptr);

// RunPlanner for requests that are ready together, planned in one planner.MakePlansWithTotals
// call (one launch on a device), with the experts' totals of the validation's pass: out[i] is
// requests[i]'s. A request that fails validation gets its error
// and is left out of the batch. plan_time_us is each plan's share of the batch's time.
std::vector<absl::StatusOr<ScoredPlan>> RunPlannerBatch(Planner& planner, std::span<const PlanRequest* const> requests);

}  // namespace taot

#include "taot/planner/run_planner.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "taot/planner/plan_validator.h"

namespace taot {

absl::StatusOr<ScoredPlan> RunPlanner(Planner& planner, const PlanRequest& request) {
  const SlotLimit limit = planner.comparison_only() ? SlotLimit::kLifted : SlotLimit::kEnforced;
  if (absl::Status s = ValidateRequest(request, limit); !s.ok()) return s;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Plan> plan = planner.MakePlan(request);
  const auto stop = std::chrono::steady_clock::now();
  if (!plan.ok()) return plan.status();
  if (absl::Status s = ValidatePlan(request, *plan, limit); !s.ok()) {
    return absl::InternalError(
        absl::StrCat("planner ", std::string(planner.name()), " returned an invalid plan: ", s.message()));
  }
  ScoredPlan out;
  out.plan = *std::move(plan);
  Canonicalize(out.plan);
  const double us = std::chrono::duration<double, std::micro>(stop - start).count();
  out.score = Score(request, out.plan, us);
  return out;
}

}  // namespace taot

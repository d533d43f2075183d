#include "taot/planner/run_planner.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "taot/planner/plan_validator.h"

namespace taot {
namespace {

// A comparison-only planner's plans may exceed the slots (Planner::comparison_only).
SlotLimit LimitOf(const Planner& planner) {
  return planner.comparison_only() ? SlotLimit::kLifted : SlotLimit::kEnforced;
}

// The planner's answer to a valid request, checked, canonical and scored.
absl::StatusOr<ScoredPlan> Checked(const Planner& planner, const PlanRequest& request, absl::StatusOr<Plan> plan,
                                   double plan_time_us) {
  if (!plan.ok()) return plan.status();
  if (absl::Status s = ValidatePlan(request, *plan, LimitOf(planner)); !s.ok()) {
    return absl::InternalError(
        absl::StrCat("planner ", std::string(planner.name()), " returned an invalid plan: ", s.message()));
  }
  ScoredPlan out;
  out.plan = *std::move(plan);
  Canonicalize(out.plan);
  out.score = Score(request, out.plan, plan_time_us);
  return out;
}

double MicrosecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

absl::StatusOr<ScoredPlan> RunPlanner(Planner& planner, const PlanRequest& request) {
  if (absl::Status s = ValidateRequest(request, LimitOf(planner)); !s.ok()) return s;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Plan> plan = planner.MakePlan(request);
  return Checked(planner, request, std::move(plan), MicrosecondsSince(start));
}

std::vector<absl::StatusOr<ScoredPlan>> RunPlannerBatch(Planner& planner,
                                                        std::span<const PlanRequest* const> requests) {
  std::vector<absl::StatusOr<ScoredPlan>> out(requests.size(), absl::UnknownError("not planned"));
  std::vector<const PlanRequest*> valid;
  std::vector<size_t> at;  // valid[j] is requests[at[j]]
  for (size_t i = 0; i < requests.size(); ++i) {
    if (absl::Status s = ValidateRequest(*requests[i], LimitOf(planner)); !s.ok()) {
      out[i] = s;
    } else {
      valid.push_back(requests[i]);
      at.push_back(i);
    }
  }
  if (valid.empty()) return out;
  const auto start = std::chrono::steady_clock::now();
  std::vector<absl::StatusOr<Plan>> plans = planner.MakePlans(valid);
  const double share_us = MicrosecondsSince(start) / static_cast<double>(valid.size());
  if (plans.size() != valid.size()) {
    const absl::Status wrong = absl::InternalError(absl::StrCat(
        "planner ", std::string(planner.name()), " returned ", plans.size(), " plans for ", valid.size(), " requests"));
    for (size_t i : at) out[i] = wrong;
    return out;
  }
  for (size_t j = 0; j < valid.size(); ++j) out[at[j]] = Checked(planner, *valid[j], std::move(plans[j]), share_us);
  return out;
}

}  // namespace taot

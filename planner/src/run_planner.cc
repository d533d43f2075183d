#include "taot/planner/run_planner.h"

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/strings/str_cat.h"
#include "taot/planner/plan_validator.h"

namespace taot {
namespace {

// A comparison-only planner's plans may exceed the slots (Planner::comparison_only).
SlotLimit LimitOf(const Planner& planner) {
  return planner.comparison_only() ? SlotLimit::kLifted : SlotLimit::kEnforced;
}

// The planner's answer to a valid request, canonical and checked; with `hash`, hashed in the
// check's walk.
absl::StatusOr<Plan> Checked(const Planner& planner, const PlanRequest& request, absl::StatusOr<Plan> plan,
                             uint64_t* hash) {
  if (!plan.ok()) return plan.status();
  // Canonical first: the check then walks the entries in order instead of grouping them again.
  if (absl::Status s = CanonicalizeAndValidate(request, *plan, LimitOf(planner), hash); !s.ok()) {
    return absl::InternalError(absl::StrCat("planner ", std::string(planner.name()),
                                            " returned an invalid plan (entries in canonical order): ", s.message()));
  }
  return plan;
}

// The same, scored.
absl::StatusOr<ScoredPlan> Scored(const Planner& planner, const PlanRequest& request, absl::StatusOr<Plan> plan,
                                  double plan_time_us, std::span<const int64_t> expert_totals) {
  ScoredPlan out;
  absl::StatusOr<Plan> checked = Checked(planner, request, std::move(plan), &out.hash);
  if (!checked.ok()) return checked.status();
  out.plan = *std::move(checked);
  out.score = Score(request, out.plan, plan_time_us, expert_totals);
  return out;
}

double MicrosecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

absl::StatusOr<ScoredPlan> RunPlanner(Planner& planner, const PlanRequest& request) {
  // The validation's pass over the load also sums each expert's tokens, for the planner and the
  // score.
  std::vector<int64_t> expert_totals;
  if (absl::Status s = ValidateRequest(request, LimitOf(planner), expert_totals); !s.ok()) return s;
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<Plan> plan = planner.MakePlanWithTotals(request, expert_totals);
  return Scored(planner, request, std::move(plan), MicrosecondsSince(start), expert_totals);
}

absl::StatusOr<Plan> CheckedPlan(Planner& planner, const PlanRequest& request, uint64_t* hash) {
  // Summing each expert in the validation's pass costs it next to nothing (it is bound by
  // reading the load), and spares the planner a pass of its own.
  std::vector<int64_t> expert_totals;
  if (absl::Status s = ValidateRequest(request, LimitOf(planner), expert_totals); !s.ok()) return s;
  return Checked(planner, request, planner.MakePlanWithTotals(request, expert_totals), hash);
}

std::vector<absl::StatusOr<ScoredPlan>> RunPlannerBatch(Planner& planner,
                                                        std::span<const PlanRequest* const> requests) {
  std::vector<absl::StatusOr<ScoredPlan>> out(requests.size(), absl::UnknownError("not planned"));
  std::vector<const PlanRequest*> valid;
  std::vector<size_t> at;                           // valid[j] is requests[at[j]]
  std::vector<std::vector<int64_t>> expert_totals;  // of valid[j]
  std::vector<int64_t> totals;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (absl::Status s = ValidateRequest(*requests[i], LimitOf(planner), totals); !s.ok()) {
      out[i] = s;
    } else {
      valid.push_back(requests[i]);
      at.push_back(i);
      expert_totals.push_back(std::move(totals));
    }
  }
  if (valid.empty()) return out;
  const auto start = std::chrono::steady_clock::now();
  std::vector<absl::StatusOr<Plan>> plans = planner.MakePlansWithTotals(valid, expert_totals);
  const double share_us = MicrosecondsSince(start) / static_cast<double>(valid.size());
  if (plans.size() != valid.size()) {
    const absl::Status wrong = absl::InternalError(absl::StrCat(
        "planner ", std::string(planner.name()), " returned ", plans.size(), " plans for ", valid.size(), " requests"));
    for (size_t i : at) out[i] = wrong;
    return out;
  }
  for (size_t j = 0; j < valid.size(); ++j)
    out[at[j]] = Scored(planner, *valid[j], std::move(plans[j]), share_us, expert_totals[j]);
  return out;
}

}  // namespace taot

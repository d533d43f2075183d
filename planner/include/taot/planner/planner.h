// The interface every planner implements.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "taot/planner/plan.h"
#include "taot/planner/plan_request.h"

namespace taot {

// A planner turns a valid request (ValidateRequest) into a valid plan (ValidatePlan).
// Contract:
// - deterministic: the same request gives the same plan, bit for bit, on any machine;
// - an instance may keep scratch memory between calls, so it is not thread-safe: use one
//   instance per thread (the registry makes a fresh one each time);
// - it reports failure as a status, never by throwing.
class Planner {
 public:
  virtual ~Planner() = default;
  virtual std::string_view name() const = 0;
  virtual absl::StatusOr<Plan> MakePlan(const PlanRequest& request) = 0;
  // MakePlan's plan, from a caller that has already summed each expert's tokens over the
  // request's load (expert_totals = ExpertTotals(request)): RunPlanner's validation pass does,
  // so a planner that starts from the totals need not read the load again (about a tenth of
  // the planning stage at EP256). This default ignores them.
  virtual absl::StatusOr<Plan> MakePlanWithTotals(const PlanRequest& request, std::span<const int64_t> expert_totals) {
    (void)expert_totals;
    return MakePlan(request);
  }
  // Plans requests that are ready together (the layers of one microbatch), plans[i] being what
  // MakePlan gives requests[i]. A planner on a device plans them in one launch; this default
  // plans them one after the other.
  virtual std::vector<absl::StatusOr<Plan>> MakePlans(std::span<const PlanRequest* const> requests) {
    std::vector<absl::StatusOr<Plan>> plans;
    plans.reserve(requests.size());
    for (const PlanRequest* request : requests) plans.push_back(MakePlan(*request));
    return plans;
  }
  // MakePlans's plans, from a caller that has summed each request's experts already
  // (expert_totals[i] = ExpertTotals(*requests[i]): RunPlannerBatch's validation pass), as
  // MakePlanWithTotals is to MakePlan. This default ignores them and calls MakePlans, so that a
  // planner that plans a batch its own way (one launch on a device) keeps it.
  virtual std::vector<absl::StatusOr<Plan>> MakePlansWithTotals(std::span<const PlanRequest* const> requests,
                                                                std::span<const std::vector<int64_t>> expert_totals) {
    (void)expert_totals;
    return MakePlans(requests);
  }
  // How a caller with several cores may plan a batch (MakePlans): kSpread, over instances of the
  // planner on several threads, each instance with its own scratch (the plans are the same);
  // kWhole, in one MakePlans call (a planner on a device: one launch); kOneThread, one instance
  // (a plugin, whose instances may share state).
  enum class Batching { kSpread, kWhole, kOneThread };
  virtual Batching batching() const { return Batching::kSpread; }
  // A comparison-only planner's plans may put more than slots_per_rank replicas on a rank (a
  // peer that re-packs every expert, as EPLB does): they can be scored and compared (RunPlanner
  // lifts the slot limit for them) but no rank could hold them, so the daemon and the client
  // refuse such a planner (PlannerRegistry::CreateRunnable).
  virtual bool comparison_only() const { return false; }
};

}  // namespace taot

// A planner that starts from the load's sums (each expert's total, each rank's load before
// replication): it takes them from a caller that has summed the experts already
// (Planner::MakePlanWithTotals: RunPlanner's validation pass) and sums the load itself
// otherwise, so that both give the same plan by construction; a batch with the totals
// (MakePlansWithTotals, the daemon's RunPlannerBatch) is the same, layer by layer.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "planners/plan_building.h"
#include "taot/planner/planner.h"

namespace taot::planners {

class SummingPlanner : public Planner {
 public:
  absl::StatusOr<Plan> MakePlan(const PlanRequest& request) final {
    SumLoads(request, sums_);
    return PlanFromSums(request, sums_);
  }
  absl::StatusOr<Plan> MakePlanWithTotals(const PlanRequest& request, std::span<const int64_t> expert_totals) final {
    SumLoads(request, expert_totals, sums_);
    return PlanFromSums(request, sums_);
  }
  std::vector<absl::StatusOr<Plan>> MakePlansWithTotals(std::span<const PlanRequest* const> requests,
                                                        std::span<const std::vector<int64_t>> expert_totals) final {
    std::vector<absl::StatusOr<Plan>> plans;
    plans.reserve(requests.size());
    for (size_t i = 0; i < requests.size(); ++i) plans.push_back(MakePlanWithTotals(*requests[i], expert_totals[i]));
    return plans;
  }

 protected:
  virtual absl::StatusOr<Plan> PlanFromSums(const PlanRequest& request, const LoadSums& sums) = 0;

 private:
  LoadSums sums_;  // kept between plans, with its memory
};

}  // namespace taot::planners

#include "taot/planner/split_over_replicas.h"

#include <algorithm>
#include <vector>

#include "planners/min_max_split.h"
#include "planners/plan_building.h"
#include "planners/token_split.h"
#include "taot/planner/plan_validator.h"

namespace taot {

absl::StatusOr<Plan> SplitOverReplicas(const PlanRequest& request, std::vector<Replica> replicas) {
  if (absl::Status s = ValidateRequest(request); !s.ok()) return s;
  if (absl::Status s = ValidateReplicas(request, replicas, "replicas"); !s.ok()) return s;
  std::sort(replicas.begin(), replicas.end());
  const planners::LoadSums sums = planners::SumLoads(request);
  Plan plan;
  planners::CheapestSplit split;
  std::vector<planners::GuestShare> shares = planners::MinMaxShares(request, sums, replicas);
  split.Append(request, sums.expert_totals, shares, plan);
  Canonicalize(plan);
  return plan;
}

}  // namespace taot

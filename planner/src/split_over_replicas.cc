#include "taot/planner/split_over_replicas.h"

#include <algorithm>
#include <vector>

#include "planners/min_max_split.h"
#include "planners/plan_building.h"
#include "planners/token_split.h"
#include "taot/planner/plan_validator.h"

namespace taot {

struct ReplicaSplitter::Buffers {
  std::vector<int64_t> expert_totals;
  planners::LoadSums sums;
  std::vector<Replica> replicas;  // sorted
  planners::MinMaxSplitter balance;
  planners::CheapestSplit dispatch;
};

ReplicaSplitter::ReplicaSplitter() : buffers_(std::make_unique<Buffers>()) {}
ReplicaSplitter::~ReplicaSplitter() = default;
ReplicaSplitter::ReplicaSplitter(ReplicaSplitter&&) noexcept = default;
ReplicaSplitter& ReplicaSplitter::operator=(ReplicaSplitter&&) noexcept = default;

absl::StatusOr<Plan> ReplicaSplitter::Split(const PlanRequest& request, std::span<const Replica> replicas) {
  Buffers& b = *buffers_;
  // The experts' totals come from the validation's pass over the load: one read of it, not two.
  if (absl::Status s = ValidateRequest(request, SlotLimit::kEnforced, b.expert_totals); !s.ok()) return s;
  if (absl::Status s = ValidateReplicas(request, replicas, "replicas"); !s.ok()) return s;
  b.replicas.assign(replicas.begin(), replicas.end());
  std::sort(b.replicas.begin(), b.replicas.end());
  planners::SumLoads(request, b.expert_totals, b.sums);
  Plan plan;
  b.dispatch.Append(request, b.sums.expert_totals, b.balance.Shares(request, b.sums, b.replicas), plan);
  Canonicalize(plan);
  return plan;
}

absl::StatusOr<Plan> SplitOverReplicas(const PlanRequest& request, std::vector<Replica> replicas) {
  return ReplicaSplitter().Split(request, replicas);
}

}  // namespace taot

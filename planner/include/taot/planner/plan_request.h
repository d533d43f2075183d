// The input of every planner: one layer of one microbatch.
#pragma once

#include <span>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "taot/planner/load_matrix.h"
#include "taot/planner/plan.h"
#include "taot/planner/problem.h"
#include "taot/planner/topology.h"

namespace taot {

// One round's input (a layer of a microbatch) on a job's shared problem.
struct PlanRequest {
  std::shared_ptr<const Problem> problem;
  // Residual imbalance the planner aims for, in percent; unset means the planner's default.
  std::optional<double> target_imbalance_pct;
  // load.at(s, e): tokens source rank s routes to expert e. ranks() x experts().
  LoadMatrix load;
  // Replicas already in place from an earlier microbatch of the same optimizer step: reusing
  // one moves no weights. A resident replica that a plan does not list is dropped.
  std::vector<Replica> resident;

  const Topology& topology() const { return problem->topology; }
  int experts() const { return problem->experts; }
  int slots_per_rank() const { return problem->slots_per_rank; }
  int64_t expert_bytes() const { return problem->expert_bytes; }
  int ranks() const { return problem->ranks(); }
  int experts_per_rank() const { return problem->experts_per_rank(); }
  int home_of(int expert) const { return problem->home_of(expert); }
};

// A request on `problem` with an all-zero load of the problem's shape, to be filled in.
PlanRequest EmptyRequest(std::shared_ptr<const Problem> problem);

// Whether replicas must fit slots_per_rank per rank: always, except around a comparison-only
// planner (Planner::comparison_only: its plans, and so the replicas they leave resident, may
// exceed K; RunPlanner lifts the limit for it) and in `taot score --lift-slot-limit`.
enum class SlotLimit { kEnforced, kLifted };

// Checks every field and every range rule; the error names the field and the bad value
// (e.g. "load[3][17]: must be >= 0, got -5"). `limit` applies to the resident replicas.
absl::Status ValidateRequest(const PlanRequest& request, SlotLimit limit = SlotLimit::kEnforced);
// The same, and each expert's total over every source (ExpertTotals) from the same pass over the
// load, for a caller that scores the plan next (RunPlanner); set only where the request is valid.
absl::Status ValidateRequest(const PlanRequest& request, SlotLimit limit, std::vector<int64_t>& expert_totals);

// The first entry of a load row outside [0, kMaxTokensPerEntry], if any. Fast on good rows
// (one vectorized pass), since every request's every row goes through it.
std::optional<size_t> FirstOutOfRange(std::span<const int64_t> row);

// The default target residual imbalance of the planners that aim for one.
inline constexpr double kDefaultTargetImbalancePct = 2.0;

}  // namespace taot

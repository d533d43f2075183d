// `taot`, ours and the default. The three phases of TAOT, made exact where the paper
// approximates and aware of what a replica costs:
// - rank level: exact optimal transport of surplus to spare room (taot_placement.h);
// - expert level: the fewest, cheapest replicas that bring every rank under the load cap that
//   the target residual imbalance implies (taot_placement.h);
// - token level: an exact integer split of each replicated expert's tokens that minimises the
//   dispatch cost (token_split.h).
// When the target cannot be met (K too small, or the load too concentrated), the plan meets the
// lowest cap it can, found by bisection, and says so (Plan::target_missed).
#include <algorithm>

#include "planners/builtin.h"
#include "planners/cycle_cancel.h"
#include "planners/params.h"
#include "planners/plan_building.h"
#include "planners/taot_placement.h"
#include "planners/token_split.h"
#include "taot/planner/load_stats.h"

namespace taot::planners {
namespace {

class TaotPlanner final : public Planner {
 public:
  explicit TaotPlanner(double default_target) : default_target_(default_target) {}
  std::string_view name() const override { return "taot"; }
  absl::StatusOr<Plan> MakePlan(const PlanRequest& request) override;

 private:
  double default_target_;
  Placement placement_;
  CycleCanceller cycles_;
  CheapestSplit split_;
  std::vector<Replica> resident_;  // sorted
};

absl::StatusOr<Plan> TaotPlanner::MakePlan(const PlanRequest& request) {
  const LoadSums sums = SumLoads(request);
  const double target = request.target_imbalance_pct.value_or(default_target_);
  const int64_t cap = LoadCap(sums.total, request.ranks(), target);
  const int64_t max_load = *std::max_element(sums.rank_loads.begin(), sums.rank_loads.end());
  Plan plan;
  if (max_load <= cap) return plan;
  if (request.slots_per_rank == 0) {
    plan.target_missed = true;
    return plan;
  }
  placement_.Prepare(request, sums);
  std::vector<Piece> pieces;
  if (!placement_.Place(cap, pieces)) {
    plan.target_missed = true;
    // The lowest cap the placement meets; at max_load nothing needs to move.
    int64_t lo = cap + 1, hi = max_load;
    std::vector<Piece> trial;
    pieces.clear();
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (placement_.Place(mid, trial)) {
        hi = mid;
        pieces = trial;
      } else {
        lo = mid + 1;
      }
    }
  }
  resident_ = request.resident;
  std::sort(resident_.begin(), resident_.end());
  cycles_.Cancel(request, sums.expert_totals, resident_, pieces);
  split_.Append(request, sums.expert_totals, std::move(pieces), plan);
  return plan;
}

}  // namespace

PlannerOr MakeTaot(const PlannerParams& params) {
  ParamReader reader("taot", params);
  const double target = reader.Double("target_imbalance_pct", kDefaultTargetImbalancePct, 0, 1e6);
  if (absl::Status s = reader.Finish(); !s.ok()) return s;
  return std::make_unique<TaotPlanner>(target);
}

}  // namespace taot::planners

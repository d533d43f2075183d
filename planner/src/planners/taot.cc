// `taot`, ours and the default. The three phases of TAOT, made exact where the paper
// approximates and aware of what a replica costs:
// - rank level: exact optimal transport of surplus to spare room (taot_placement.h);
// - expert level: the fewest, cheapest replicas that bring every rank under the load cap that
//   the target residual imbalance implies (taot_placement.h);
// - token level: an exact integer split of each replicated expert's tokens that minimises the
//   dispatch cost (token_split.h).
// When the target cannot be met (K too small, or the load too concentrated), the plan meets the
// lowest cap it can, found by bisection, and says so (Plan::target_missed).
//
// The right target depends on the hardware: balance saves GEMM time on the busiest rank, and
// each replica costs a weight transfer that may outlast the home experts' GEMMs. With
// target_imbalance_pct=auto the planner plans at a few candidate targets and keeps the plan
// whose modelled layer time (layer_time.h, on the configured cluster and model) is least, its
// transfers spread over the microbatches of a step that will reuse its replicas.
#include <algorithm>
#include <optional>
#include <string>

#include "planners/builtin.h"
#include "planners/cycle_cancel.h"
#include "planners/hardware_params.h"
#include "planners/params.h"
#include "planners/plan_building.h"
#include "planners/summing_planner.h"
#include "planners/taot_placement.h"
#include "planners/token_split.h"
#include "taot/planner/layer_time.h"
#include "taot/planner/load_stats.h"

namespace taot::planners {
namespace {

// Targets the auto mode may pick, in %, ascending: dense where the trade-off usually turns.
constexpr double kAutoCandidates[] = {0, 1, 2, 3, 5, 10, 20};
constexpr int kAutoStart = 2;  // the default target, 2%

class TaotPlanner final : public SummingPlanner {
 public:
  TaotPlanner(double default_target, std::optional<Hardware> auto_target)
      : default_target_(default_target), auto_(std::move(auto_target)) {}
  std::string_view name() const override { return "taot"; }

 private:
  absl::StatusOr<Plan> PlanFromSums(const PlanRequest& request, const LoadSums& sums) override;
  Plan PlanAt(const PlanRequest& request, const LoadSums& sums, double target);
  Plan PlanAtBestTarget(const PlanRequest& request, const LoadSums& sums);

  double default_target_;
  std::optional<Hardware> auto_;
  // Scratch kept between plans, so that a plan allocates only the Plan it returns.
  std::vector<Piece> pieces_, trial_;
  Placement placement_;
  CycleCanceller cycles_;
  CheapestSplit split_;
  std::vector<Replica> resident_;  // sorted
};

absl::StatusOr<Plan> TaotPlanner::PlanFromSums(const PlanRequest& request, const LoadSums& sums) {
  // A target in the request is the caller's explicit choice and wins over auto.
  if (auto_ && !request.target_imbalance_pct) return PlanAtBestTarget(request, sums);
  return PlanAt(request, sums, request.target_imbalance_pct.value_or(default_target_));
}

// The modelled time falls as the target drops until the transfers cost more than the balance
// saves, then rises: a walk from the default target towards the better neighbour finds the
// turn in a few plans (each a full plan plus its model) instead of planning every candidate.
Plan TaotPlanner::PlanAtBestTarget(const PlanRequest& request, const LoadSums& sums) {
  constexpr int kCount = static_cast<int>(std::size(kAutoCandidates));
  const LayerTimeModel model(auto_->cluster, auto_->model, request);
  std::optional<Plan> plans[kCount];
  double times[kCount] = {};
  auto evaluate = [&](int i) {
    if (!plans[i]) {
      plans[i] = PlanAt(request, sums, kAutoCandidates[i]);
      plans[i]->chosen_target_pct = kAutoCandidates[i];
      times[i] = model.Evaluate(*plans[i], false).amortized_us(auto_->microbatches);
    }
    return times[i];
  };
  // Lower targets win more often (replicas stay resident over the step), so look down first.
  int at = kAutoStart;
  const int step = evaluate(kAutoStart - 1) < evaluate(kAutoStart) ? -1 : 1;
  if (step < 0) at = kAutoStart - 1;
  while (at + step >= 0 && at + step < kCount && evaluate(at + step) < times[at]) at += step;
  // Not replicating at all is a candidate too: where links are slow, no replica pays.
  Plan none;
  none.chosen_target_pct = ImbalancePct(sums.rank_loads);
  if (model.Evaluate(none, false).amortized_us(auto_->microbatches) <= times[at]) return none;
  return *std::move(plans[at]);
}

Plan TaotPlanner::PlanAt(const PlanRequest& request, const LoadSums& sums, double target) {
  const int64_t cap = LoadCap(sums.total, request.ranks(), target);
  const int64_t max_load = *std::max_element(sums.rank_loads.begin(), sums.rank_loads.end());
  Plan plan;
  if (max_load <= cap) return plan;
  if (request.slots_per_rank() == 0) {
    plan.target_missed = true;
    return plan;
  }
  placement_.Prepare(request, sums);
  std::vector<Piece>& pieces = pieces_;
  if (!placement_.Place(cap, pieces)) {
    plan.target_missed = true;
    // The lowest cap the placement meets; at max_load nothing needs to move. A probe only asks
    // whether a cap is met, so it stops at the first pass that meets it; the cap found is then
    // placed with every pass.
    int64_t lo = cap + 1, hi = max_load;
    std::vector<Piece>& trial = trial_;
    pieces.clear();
    bool met = false;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (placement_.Place(mid, trial, /*first_met=*/true)) {
        hi = mid;
        met = true;
      } else {
        lo = mid + 1;
      }
    }
    if (met) placement_.Place(hi, pieces);
  }
  resident_ = request.resident;
  std::sort(resident_.begin(), resident_.end());
  cycles_.Cancel(request, sums.expert_totals, resident_, pieces);
  split_.Append(request, sums.expert_totals, pieces, plan);
  return plan;
}

}  // namespace

PlannerOr MakeTaot(const PlannerParams& params) {
  ParamReader reader("taot", params);
  const auto it = params.find("target_imbalance_pct");
  const bool automatic = it != params.end() && it->second == "auto";
  const double target = automatic ? kDefaultTargetImbalancePct
                                  : reader.Double("target_imbalance_pct", kDefaultTargetImbalancePct, 0, 1e6);
  std::optional<Hardware> hardware;
  if (automatic) {
    reader.Known("target_imbalance_pct");
    absl::StatusOr<Hardware> read = ReadHardware(reader);
    if (!read.ok()) return read.status();
    hardware = *std::move(read);
  } else if (const std::optional<std::string> key = FirstHardwareKey(params)) {
    return absl::InvalidArgumentError(absl::StrCat("planner taot: parameter '", *key,
                                                   "' describes the hardware that target_imbalance_pct=auto models; "
                                                   "it needs target_imbalance_pct=auto"));
  }
  if (absl::Status s = reader.Finish(); !s.ok()) return s;
  return std::make_unique<TaotPlanner>(target, std::move(hardware));
}

}  // namespace taot::planners

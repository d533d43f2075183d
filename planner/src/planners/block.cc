// taot-block in the registry: the CPU build of taot/planner/block_planner.h (a block of one
// thread, BlockHostLayer) on the request. The same function runs as one CUDA block per layer on a
// device (kernels/block_planner.h), where it gives this plan bit for bit.
#include "planners/builtin.h"
#include "planners/params.h"
#include "taot/planner/block_host.h"
#include "taot/planner/load_stats.h"

namespace taot::planners {
namespace {

class BlockPlanner final : public Planner {
 public:
  explicit BlockPlanner(double target) : default_target_(target) {}
  std::string_view name() const override { return "taot-block"; }

  absl::StatusOr<Plan> MakePlan(const PlanRequest& request) override {
    layer_.Prepare(request.problem);
    const double target = request.target_imbalance_pct.value_or(default_target_);
    layer_.Plan(request.load, LoadCap(TotalTokens(request.load), request.ranks(), target), request.resident);
    return layer_.ToPlan();
  }

 private:
  const double default_target_;
  BlockHostLayer layer_;
};

}  // namespace

PlannerOr MakeTaotBlock(const PlannerParams& params) {
  ParamReader reader("taot-block", params);
  const double target = reader.Double("target_imbalance_pct", kDefaultTargetImbalancePct, 0, 1e6);
  if (absl::Status s = reader.Finish(); !s.ok()) return s;
  return std::make_unique<BlockPlanner>(target);
}

}  // namespace taot::planners

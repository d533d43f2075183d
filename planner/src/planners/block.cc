// taot-block in the registry: the CPU build of taot/planner/block_planner.h (a block of one
// thread, BlockHostLayer) on the request. The same function runs as one CUDA block per layer on a
// device (taot/kernels/plan_layers.h; taot/kernels/device_block_planner.h in the registry), where
// it gives this plan bit for bit.
#include "planners/builtin.h"
#include "planners/params.h"
#include "taot/planner/block_host.h"
#include "taot/planner/load_stats.h"

namespace taot::planners {
namespace {

class BlockPlanner final : public Planner {
 public:
  explicit BlockPlanner(BlockPlannerParams params) : params_(params) {}
  std::string_view name() const override { return "taot-block"; }

  absl::StatusOr<Plan> MakePlan(const PlanRequest& request) override {
    layer_.Prepare(request.problem);
    layer_.Plan(request.load, BlockCap(request, params_), request.resident);
    return layer_.ToPlan();
  }

 private:
  const BlockPlannerParams params_;
  BlockHostLayer layer_;
};

}  // namespace

PlannerOr MakeTaotBlock(const PlannerParams& params) {
  absl::StatusOr<BlockPlannerParams> read = ReadBlockPlannerParams(params);
  if (!read.ok()) return read.status();
  return std::make_unique<BlockPlanner>(*read);
}

}  // namespace taot::planners

namespace taot {

absl::StatusOr<BlockPlannerParams> ReadBlockPlannerParams(const PlannerParams& params) {
  planners::ParamReader reader("taot-block", params);
  BlockPlannerParams out;
  out.target_imbalance_pct = reader.Double("target_imbalance_pct", kDefaultTargetImbalancePct, 0, 1e6);
  if (absl::Status s = reader.Finish(); !s.ok()) return s;
  return out;
}

int64_t BlockCap(const PlanRequest& request, const BlockPlannerParams& params) {
  return LoadCap(TotalTokens(request.load), request.ranks(),
                 request.target_imbalance_pct.value_or(params.target_imbalance_pct));
}

}  // namespace taot

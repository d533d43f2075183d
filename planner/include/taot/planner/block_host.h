// taot-block on the host (block_planner.h): a problem's arrays (each rank's node, the costs in
// fixed point) and one layer's buffers, kept from plan to plan; the CPU reference runs on them,
// and its arrays become a Plan. The registry planner and the tests use it; a device launch fills
// the same arrays.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "taot/planner/block_planner.h"
#include "taot/planner/load_matrix.h"
#include "taot/planner/plan.h"
#include "taot/planner/plan_request.h"
#include "taot/planner/planner_params.h"
#include "taot/planner/problem.h"

namespace taot {

// A problem's arrays for taot-block, in host memory: each rank's node, the costs in fixed point,
// the ranks by node; and the Shape over them (a device launch copies the arrays and points a
// Shape of its own at the copies).
struct BlockShapeArrays {
  explicit BlockShapeArrays(const Problem& problem);
  BlockShapeArrays(const BlockShapeArrays&) = delete;
  BlockShapeArrays& operator=(const BlockShapeArrays&) = delete;

  std::vector<int32_t> node_of, by_node, node_start;
  std::vector<int64_t> cost;
  block::Shape shape;
};

// taot-block's parameters, checked (errors name the parameter) as the registry's taot-block
// checks them: one reading for the CPU build and a device's.
struct BlockPlannerParams {
  double target_imbalance_pct = kDefaultTargetImbalancePct;  // when a request sets none
};
absl::StatusOr<BlockPlannerParams> ReadBlockPlannerParams(const PlannerParams& params);

// The cap of a taot-block plan of `request`: its target, or else `params`', on its load.
int64_t BlockCap(const PlanRequest& request, const BlockPlannerParams& params);

// `resident` as block::Layer takes it: (expert, rank) pairs in canonical order, in `pairs`
// (`sorted` is scratch; both are kept by the caller, so that a warm plan allocates nothing).
void ResidentPairs(std::span<const Replica> resident, std::vector<Replica>& sorted, std::vector<int32_t>& pairs);

// A block plan's outputs (`layer`'s arrays and cap, in host memory: its counts say how much of
// them is the plan) as a Plan in canonical order (as Canonicalize leaves it); target_missed when
// a rank ends above the cap. `by_source` is scratch.
taot::Plan BlockPlanToPlan(const block::Layer& layer, int32_t ranks, std::vector<int64_t>& by_source);

class BlockHostLayer {
 public:
  // The arrays of `problem`, made again only when the problem changes (it is held meanwhile, so
  // that no other problem can take its address).
  void Prepare(const std::shared_ptr<const Problem>& problem);
  // Plans `load` (the prepared problem's R x E) to at most `cap` tokens per rank, reusing the
  // `resident` replicas for free, as a block of `threads` threads does: more than one are threads
  // of this process meeting at the block's barriers, as a device's do, and any count must give
  // the plan one thread gives.
  void Plan(const LoadMatrix& load, int64_t cap, std::span<const Replica> resident = {}, int threads = 1);
  // The last plan, in canonical order (as Canonicalize leaves it); target_missed when a rank ends
  // above the cap.
  taot::Plan ToPlan();

  const block::Shape& shape() const { return shape_; }
  // The last plan's arrays (block_planner.h's Layer outputs), for what reads a block plan as it
  // is (kernels/block_tables.h).
  const block::Layer& layer() const { return layer_; }
  int64_t max_load() const { return max_load_; }

 private:
  std::shared_ptr<const Problem> problem_;
  std::unique_ptr<BlockShapeArrays> arrays_;
  block::Shape shape_;
  block::Layer layer_;
  std::vector<int32_t> piece_expert_, piece_rank_;
  std::vector<int64_t> piece_tokens_, scratch_;
  std::vector<int32_t> scratch32_;
  std::unique_ptr<int32_t[]> entry_piece_, entry_source_;
  std::unique_ptr<int64_t[]> entry_tokens_;
  std::vector<int64_t> by_source_;        // BlockPlanToPlan's scratch
  std::vector<Replica> sorted_resident_;  // kept, so that a plan allocates nothing once warm
  std::vector<int32_t> resident_;         // (expert, rank) pairs, canonical
  int32_t counts_[2] = {0, 0};
  int64_t max_load_ = 0;
};

}  // namespace taot

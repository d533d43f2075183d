// taot-block on the host (block_planner.h): a problem's arrays (each rank's node, the costs in
// fixed point) and one layer's buffers, kept from plan to plan; the CPU reference runs on them,
// and its arrays become a Plan. The registry planner and the tests use it; a device launch fills
// the same arrays.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "taot/planner/block_planner.h"
#include "taot/planner/load_matrix.h"
#include "taot/planner/plan.h"
#include "taot/planner/problem.h"

namespace taot {

class BlockHostLayer {
 public:
  // The arrays of `problem`, made again only when the problem changes (it is held meanwhile, so
  // that no other problem can take its address).
  void Prepare(const std::shared_ptr<const Problem>& problem);
  // Plans `load` (the prepared problem's R x E) to at most `cap` tokens per rank, as a block of
  // `threads` threads does: threads 1.. first, then thread 0 (the others only sum their share
  // before the first barrier), so any thread count must give the plan one thread gives.
  void Plan(const LoadMatrix& load, int64_t cap, int threads = 1);
  // The last plan, canonical (Canonicalize); target_missed when a rank ends above the cap.
  taot::Plan ToPlan() const;

  const block::Shape& shape() const { return shape_; }
  int64_t max_load() const { return max_load_; }

 private:
  std::shared_ptr<const Problem> problem_;
  block::Shape shape_;
  std::vector<int32_t> node_of_;
  std::vector<int64_t> cost_;
  block::Layer layer_;
  std::vector<int32_t> piece_expert_, piece_rank_, entry_piece_, entry_source_;
  std::vector<int64_t> piece_tokens_, entry_tokens_, scratch_;
  int32_t counts_[2] = {0, 0};
  int64_t max_load_ = 0;
};

}  // namespace taot

// EPLB's own algorithm, one layer: deepseek-ai/EPLB at d52c72d5b2f2fb4c41afbf8eb21366820239913d,
// eplb.py, rebalance_experts (with balanced_packing, replicate_experts and
// rebalance_experts_hierarchical). It knows nothing of homes or slot limits: it lays the experts
// out afresh on num_replicas physical slots, num_replicas / num_gpus per GPU.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"

namespace taot::planners {

struct EplbShape {
  int num_replicas = 0;  // physical slots in all
  int num_groups = 0;    // expert groups (contiguous experts) packed onto nodes as units
  int num_nodes = 0;
  int num_gpus = 0;
};

struct EplbLayout {
  int slots_per_gpu = 0;     // physical slot p lives on EPLB GPU p / slots_per_gpu
  std::vector<int> phy2log;  // per physical slot: its expert
  std::vector<int> phyrank;  // per physical slot: which copy of its expert it is (0 first)
  std::vector<int> logcnt;   // per expert: its copies
};

// rebalance_experts(weight[1, E], num_replicas, num_groups, num_nodes, num_gpus). Fails, as the
// peer's asserts do, when the shape does not divide (E by groups, groups by nodes, GPUs by nodes,
// slots by GPUs) or there are fewer slots than experts.
absl::StatusOr<EplbLayout> RebalanceExperts(std::span<const int64_t> weight, const EplbShape& shape);

}  // namespace taot::planners

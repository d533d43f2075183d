// What a plan costs in time: a model of one MoE layer of one microbatch on a cluster, used by
// taot-sim to compare planners and by `taot` to choose its target residual imbalance
// (target_imbalance_pct=auto). docs/model.md gives every formula and the sources of the
// figures; the model ignores what every planner shares (attention, the shared experts,
// planning itself), which taot-sim adds around it.
#pragma once

#include <cstdint>
#include <vector>

#include "taot/planner/cluster_spec.h"
#include "taot/planner/model_spec.h"
#include "taot/planner/plan.h"
#include "taot/planner/plan_request.h"

namespace taot {

// Time of one layer, microseconds; the plan is ready at time 0.
struct LayerTime {
  // Forward: all-to-all dispatch, expert GEMMs (the last rank to finish decides, including
  // its wait for replica weights), all-to-all combine.
  double dispatch_us = 0;
  double compute_us = 0;
  double combine_us = 0;
  // The longest wait of a rank for replica weights (part of compute_us), and what compute_us
  // would be with every replica already resident (a later microbatch of the same step).
  double stall_us = 0;
  double resident_compute_us = 0;
  // Backward: the two all-to-alls again, twice the GEMM work (input and weight gradients), and
  // the exposed part of returning guest gradients to the home ranks.
  double backward_us = 0;
  double gradient_return_us = 0;

  double forward_us() const { return dispatch_us + compute_us + combine_us; }
  double total_us() const { return forward_us() + backward_us + gradient_return_us; }
  // The layer over `microbatches` microbatches that reuse this plan's replicas: the transfers
  // are paid once, the balance every time.
  double amortized_us(int microbatches) const {
    return total_us() + (microbatches - 1) * (total_us() - compute_us + resident_compute_us);
  }
};

// The model of one request's layer, for evaluating several plans of it: what every plan shares
// (the token counts per home, the expert totals) is computed once. Keeps references to its
// arguments, which must outlive it.
class LayerTimeModel {
 public:
  LayerTimeModel(const ClusterSpec& cluster, const ModelSpec& model, const PlanRequest& request);
  // As ModelLayerTime below.
  LayerTime Evaluate(const Plan& plan, bool return_gradients) const;

 private:
  const ClusterSpec& cluster_;
  const ModelSpec& model_;
  const PlanRequest& request_;
  std::vector<double> home_copies_;
  std::vector<int64_t> expert_totals_;
};

// Models `plan` (valid for `request`) on `cluster` running `model`. The request's topology
// decides which ranks share a node; its resident replicas move no weights. Guest gradients
// go home only when `return_gradients` (the last microbatch of an optimizer step).
LayerTime ModelLayerTime(const ClusterSpec& cluster, const ModelSpec& model, const PlanRequest& request,
                         const Plan& plan, bool return_gradients);

// Time to move `replicas`' weights from their homes (`request`'s topology: NVLink inside a node,
// InfiniBand across) with nothing else on the links: what a prefetch ahead of the layer takes.
double WeightMovesUs(const ClusterSpec& cluster, const ModelSpec& model, const PlanRequest& request,
                     const std::vector<Replica>& replicas);

}  // namespace taot

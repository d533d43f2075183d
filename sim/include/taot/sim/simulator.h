// Runs a planner over a workload the way a training job would and adds up the modelled time:
// per layer and microbatch the planner (or, in the predictive mode, the split) runs on the
// critical path, then the layer (layer_time.h) and the parts every planner shares (attention
// and the shared experts, forward and backward). Replicas stay resident across the
// microbatches of a step.
#pragma once

#include <functional>

#include "absl/status/statusor.h"
#include "taot/planner/planner.h"
#include "taot/sim/scenario.h"
#include "taot/sim/workload.h"

namespace taot::sim {

// Means over the measured steps (all but the first when there are several: it warms up the
// predictive mode, and every mode skips it alike). Per-step figures are for the whole model
// (the workload's layers scaled to the model's MoE layers).
struct SimResult {
  double step_ms = 0;               // forward + backward of all microbatches of one optimizer step
  double forward_ms = 0;            // forward of one microbatch
  double stall_ms = 0;              // per step, GPUs waiting for replica weights (the busiest rank)
  double plan_ms = 0;               // per step, planning on the critical path
  double plan_time_us = 0;          // median time of one planning stage on the critical path (CheckedPlan)
  double imbalance_before_pct = 0;  // per (layer, microbatch)
  double imbalance_after_pct = 0;
  double transfers_intra = 0;  // per step
  double transfers_inter = 0;
  // Per plan, as the scorecard counts them (the paper's Table 1 figures).
  double plan_weighted_cost = 0;
  double plan_transfers_intra = 0;
  double plan_transfers_inter = 0;
  // Mean target the planner chose for itself (taot with target_imbalance_pct=auto), or -1.
  double chosen_target_pct = -1;
  // Predictive mode, per step: the time the placements' weight moves take, and the part of it
  // that the forward pass of the layers before each one does not hide (counted in step_ms and
  // stall_ms). A prefetch starts after the optimizer step (the weights are final only then) and
  // must be done when its layer starts.
  double prefetch_ms = 0;
  double prefetch_exposed_ms = 0;
};

// Where in a run a request is planned.
struct PlanPoint {
  int step = 0;
  int layer = 0;  // of the workload's layers
  int microbatch = 0;
};

// Sees each request of the critical path (the local and remote modes' plans, the predictive
// mode's splits) before it is planned, outside the timed stage; an error stops the run.
using RequestObserver = std::function<absl::Status(const PlanPoint&, const PlanRequest&)>;

// The workload's ranks must equal scenario.ranks. Planner errors (an invalid plan) stop the
// run and say at which (step, layer, microbatch).
absl::StatusOr<SimResult> Simulate(const Scenario& scenario, const Workload& workload, Planner& planner,
                                   const RequestObserver& observe = nullptr);

}  // namespace taot::sim

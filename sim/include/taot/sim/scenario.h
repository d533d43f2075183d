// Everything one simulation needs besides the planner: the cluster, the model, the job's
// layout, how planning runs, and the workload. A scenario file (JSON, docs/model.md) sets any
// of it; experiments start from one and sweep a field.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "taot/planner/cluster_spec.h"
#include "taot/planner/model_spec.h"
#include "taot/sim/sequence_workload.h"

namespace taot::sim {

// Where planning runs (docs/design.md, "The data path of one layer").
enum class PlanningMode {
  kLocal,       // every rank runs the planner on the all-gathered counts
  kRemote,      // a rank asks the daemon and waits: the planner plus a round trip
  kPredictive,  // replicas placed from the previous step's loads and prefetched; at the
                // layer only the split (SplitOverReplicas) runs
};
absl::StatusOr<PlanningMode> ParsePlanningMode(const std::string& name);
const char* PlanningModeName(PlanningMode mode);

struct Scenario {
  std::string cluster_name = "h800";
  ClusterSpec cluster;
  ModelSpec model;  // default: qwen3-30b-a3b
  int ranks = 16;   // expert-parallel size; ranks_per_node = min(cluster.gpus_per_node, ranks)
  int slots_per_rank = 2;
  double inter_node_cost = 3;  // λ, the planners' relative cost of a cross-node transfer
  PlanningMode mode = PlanningMode::kLocal;
  double rpc_us = 60;  // remote mode: a gRPC round trip (20-60 us p50 on loopback: docs/model.md)
  // For a planner that picks its own target (taot, target_imbalance_pct=auto): pick it at the
  // first microbatch of each step and layer only, and plan the later microbatches at that
  // target, so the search runs once per step instead of once per microbatch.
  bool reuse_chosen_target = false;
  // The synthetic workload (ranks, experts, top_k and tokens_per_rank follow the above and the
  // model); ignored when `trace` names a recorded one.
  SequenceOptions workload;
  std::string trace;
};

// The defaults above (qwen3-30b-a3b on h800, EP16, K = 2, local planning, 48 layers,
// 4 steps (the first a warm-up) of 4 microbatches, 50% initial imbalance).
Scenario DefaultScenario();

// Reads a scenario file over `base`: every key optional, unknown keys refused; errors name the
// file and the field ("scenario.json: cluster.nvlink_gbps: must be a positive number, got -1").
absl::StatusOr<Scenario> ReadScenario(const std::string& path, Scenario base);

// Checks the whole scenario (cluster, model, layout, workload); the error names the field.
absl::Status ValidateScenario(const Scenario& scenario);

// The synthetic workload's options with the scenario's ranks and model filled in.
SequenceOptions WorkloadOptions(const Scenario& scenario);

}  // namespace taot::sim

#include "planners/builtin_list.h"

#include "absl/strings/str_cat.h"
#include "planners/builtin.h"
#include "taot/planner/hardware_fields.h"

namespace taot::planners {

void AddBuiltInPlanners(PlannerRegistry& registry) {
  auto add = [&](PlannerInfo info, PlannerRegistry::Factory factory) {
    // Built-in names are distinct by construction.
    (void)registry.Register(std::move(info), std::move(factory));
  };
  add({"taot",
       "ours: exact rank-level OT, cost-aware placement to a target imbalance, exact token split",
       {"target_imbalance_pct: residual imbalance (%) to aim for when the request sets none, or "
        "'auto': the candidate target (0 to 20%) whose plan has the least modelled layer time "
        "on the cluster and model below (2)",
        "cluster: hardware preset for auto, h800 or h100 (h800)",
        "model: model preset for auto, qwen3-30b-a3b or deepseek-v3 (qwen3-30b-a3b)",
        absl::StrCat(HardwareFieldKeys(HardwareSide::kCluster), ": override the cluster preset (docs/model.md)"),
        absl::StrCat(HardwareFieldKeys(HardwareSide::kModel), ": override the model preset"),
        "microbatches: microbatches per optimizer step, over which auto spreads a replica's "
        "transfer (1)"}},
      MakeTaot);
  add({"taot-paper",
       "TAOT as published: Sinkhorn hint, column-first matching, token auction",
       {"sinkhorn_iterations: Sinkhorn iterations of the rank-level hint (50)",
        "auction_rounds: rounds of the token auction (300)", "auction_epsilon: price step of the token auction (1)",
        "hint_weight: weight of the rank-level hint in the placement score (0.1)"}},
      MakeTaotPaper);
  add({"echo", "ECHO: tokens above the mean spill greedily into spare slots (topology-agnostic)", {}}, MakeEcho);
  add({"llep",
       "LLEP: experts by load, home up to a cap, overflow to the least-loaded GPU",
       {"capacity_factor: home cap as a multiple of the mean load (1.1)",
        "min_chunk: smallest overflow chunk sent to a GPU, in tokens (128)"}},
      MakeLlep);
  add({"eplb",
       "EPLB's own code (rebalance_experts): re-packs every expert onto E + R*K slots from expert totals; "
       "comparison only: its plans exceed K replicas per rank, so the daemon and the client refuse it",
       {"groups: expert groups EPLB packs onto nodes, 8 or R (the ranks) (8); the request's target "
        "imbalance, resident replicas and link costs are ignored, as EPLB has no notion of them"}},
      MakeEplb);
  add({"eplb-fixed-home",
       "EPLB's ideas on fixed homes: nodes first then replicas inside a node, from expert totals, within K",
       {}},
      MakeEplbFixedHome);
  add({"lplb", "LPLB: replicas on a fixed cube/torus graph, token split by a min-max-load LP", {}}, MakeLplb);
  add({"none", "no replication (standard expert parallelism)", {}}, MakeNone);
}

}  // namespace taot::planners

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
  add({"taot-block",
       "ours, for one CUDA block per layer: one source for CPU and GPU, integer decisions; sheds hot ranks "
       "inside their node, then across nodes by the cheaper per token of direct pieces and chains",
       {"target_imbalance_pct: residual imbalance (%) to aim for when the request sets none (2)"}},
      MakeTaotBlock);
  add({"taot-paper",
       "TAOT as its code does it (Loong-Megatron): Sinkhorn hint, K rounds of cold ranks proposing "
       "experts, token auction; ignores target_imbalance_pct (the code has none)",
       {"sinkhorn_iterations: Sinkhorn iterations of the rank-level hint (50)",
        "auction_rounds: rounds of the token auction (300)", "auction_epsilon: price step of the token auction (1)",
        "hint_weight: weight of the rank-level hint in the placement score (0.1)"}},
      MakeTaotPaper);
  add({"echo",
       "ECHO (its code): sorted spills laid against sorted spare room (next fit), K largest chunks per "
       "rank, breadth- then depth-first token split; topology-agnostic; ignores target_imbalance_pct",
       {}},
      MakeEcho);
  add({"llep",
       "LLEP (its compute_llep_lpt_plan): experts by load, each GPU up to a cap counting its pending "
       "natives, overflow to the least-loaded GPU with a free slot; ignores target_imbalance_pct",
       {"max_tokens_factor: the cap as a multiple of total // ranks (1.1)",
        "min_tokens_per_gemm: smallest chunk sent to a helper GPU unless it is the last, in tokens (1024)"}},
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

#include "taot/planner/registry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "planners/builtin.h"

namespace taot {
namespace {

PlannerRegistry MakeBuiltIn() {
  PlannerRegistry registry;
  auto add = [&](PlannerInfo info, PlannerRegistry::Factory factory) {
    // Built-in names are distinct by construction.
    (void)registry.Register(std::move(info), std::move(factory));
  };
  add({"taot", "ours: exact rank-level OT, cost-aware placement to a target imbalance, exact token split",
       {"target_imbalance_pct: residual imbalance (%) to aim for when the request sets none, or "
        "'auto': the candidate target (0 to 20%) whose plan has the least modelled layer time "
        "on the cluster and model below (2)",
        "cluster: hardware preset for auto, h800 or h100 (h800)",
        "model: model preset for auto, qwen3-30b-a3b or deepseek-v3 (qwen3-30b-a3b)",
        "gemm_tflops, hbm_gbps, nvlink_gbps, ib_gbps, nvlink_latency_us, ib_latency_us, "
        "gemm_launch_us, nics_per_gpu: override the cluster preset (docs/model.md)",
        "hidden, expert_ffn, top_k, dtype_bytes: override the model preset",
        "microbatches: microbatches per optimizer step, over which auto spreads a replica's "
        "transfer (1)"}},
      planners::MakeTaot);
  add({"taot-paper", "TAOT as published: Sinkhorn hint, column-first matching, token auction",
       {"sinkhorn_iterations: Sinkhorn iterations of the rank-level hint (50)",
        "auction_rounds: rounds of the token auction (300)",
        "auction_epsilon: price step of the token auction (1)",
        "hint_weight: weight of the rank-level hint in the placement score (0.1)"}},
      planners::MakeTaotPaper);
  add({"echo", "ECHO: tokens above the mean spill greedily into spare slots (topology-agnostic)", {}},
      planners::MakeEcho);
  add({"llep", "LLEP: experts by load, home up to a cap, overflow to the least-loaded GPU",
       {"capacity_factor: home cap as a multiple of the mean load (1.1)",
        "min_chunk: smallest overflow chunk sent to a GPU, in tokens (128)"}},
      planners::MakeLlep);
  add({"eplb", "EPLB: hierarchical, nodes first then replicas inside a node, from expert totals", {}},
      planners::MakeEplb);
  add({"lplb", "LPLB: replicas on a fixed cube/torus graph, token split by a min-max-load LP", {}},
      planners::MakeLplb);
  add({"none", "no replication (standard expert parallelism)", {}}, planners::MakeNone);
  return registry;
}

}  // namespace

const PlannerRegistry& PlannerRegistry::BuiltIn() {
  static const PlannerRegistry* registry = new PlannerRegistry(MakeBuiltIn());
  return *registry;
}

absl::Status PlannerRegistry::Register(PlannerInfo info, Factory factory) {
  for (const Entry& e : entries_) {
    if (e.info.name == info.name) {
      return absl::AlreadyExistsError(absl::StrCat("planner '", info.name, "' is already registered"));
    }
  }
  entries_.push_back({std::move(info), std::move(factory)});
  return absl::OkStatus();
}

std::vector<std::string> PlannerRegistry::names() const {
  std::vector<std::string> out;
  for (const Entry& e : entries_) out.push_back(e.info.name);
  return out;
}

absl::StatusOr<std::unique_ptr<Planner>> PlannerRegistry::Create(std::string_view name,
                                                                 const PlannerParams& params) const {
  for (const Entry& e : entries_) {
    if (e.info.name == name) return e.factory(params);
  }
  return absl::NotFoundError(absl::StrCat("unknown planner '", std::string(name), "' (known: ",
                                          absl::StrJoin(names(), ", "), ")"));
}

absl::StatusOr<PlannerInfo> PlannerRegistry::Describe(std::string_view name) const {
  for (const Entry& e : entries_) {
    if (e.info.name == name) return e.info;
  }
  return absl::NotFoundError(absl::StrCat("unknown planner '", std::string(name), "' (known: ",
                                          absl::StrJoin(names(), ", "), ")"));
}

}  // namespace taot

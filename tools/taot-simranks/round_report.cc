#include "round_report.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "taot/planner/plan_request.h"
#include "taot/planner/topology.h"

namespace taot::simranks {

absl::StatusOr<std::shared_ptr<const Problem>> SimulatedProblem(int ranks, int experts, int ranks_per_node,
                                                                int slots_per_rank) {
  std::vector<int> node_of_rank;
  for (int r = 0; r < ranks; ++r) node_of_rank.push_back(r / ranks_per_node);
  absl::StatusOr<Topology> topology = Topology::FromNodes(std::move(node_of_rank));
  if (!topology.ok()) return topology.status();
  Problem problem;
  problem.topology = *std::move(topology);
  problem.experts = experts;
  problem.slots_per_rank = slots_per_rank;
  return ShareProblem(std::move(problem));
}

Scorecard ScoreRound(std::shared_ptr<const Problem> problem, LoadMatrix load, const Plan& plan) {
  PlanRequest request;
  request.problem = std::move(problem);
  request.load = std::move(load);
  return Score(request, plan, 0);
}

std::string FormatRound(int64_t step, int layer, const Scorecard& s, const client::LayerPlan& plan) {
  return absl::StrFormat(
      "step %3d layer %2d  imbalance %5.1f%% -> %5.1f%%  transfers %2d intra %2d inter  tokens across nodes %7d  "
      "%s v%d %016x%s",
      step, layer, s.imbalance_before_pct, s.imbalance_after_pct, s.intra_node_transfers, s.inter_node_transfers,
      s.tokens_inter_node, ProvenanceName(plan.identity.provenance), plan.identity.version, plan.identity.hash,
      plan.identity.provenance == Provenance::kDaemonRound ? "" : absl::StrCat("  FALLBACK: ", plan.identity.reason));
}

Summary Summarize(int rounds, int ranks, int fallback_rounds, int mismatched, std::vector<double> latencies_us) {
  std::sort(latencies_us.begin(), latencies_us.end());
  auto pct = [&](double p) {
    if (latencies_us.empty()) return 0.0;
    return latencies_us[static_cast<size_t>(p * static_cast<double>(latencies_us.size() - 1))];
  };
  return {rounds, ranks, fallback_rounds, mismatched, pct(0.5), pct(0.99)};
}

std::string FormatSummary(const Summary& s) {
  return absl::StrFormat(
      "%d rounds x %d ranks: %d fallback rounds, %d plans that differ from rank 0's; plan latency p50 %.0f us, "
      "p99 %.0f us",
      s.rounds, s.ranks, s.fallback_rounds, s.mismatched, s.p50_us, s.p99_us);
}

}  // namespace taot::simranks

// What taot-simranks prints: one line per planned (step, layer) and a summary at the end. The
// figures of a line are the shared scorecard's, computed here from the workload's whole load
// matrix (the client API hands back the plan, not the daemon's PlanStats); they equal the
// daemon's, which scores the same plan on the same load and node grouping.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "taot/client/client.h"
#include "taot/planner/load_matrix.h"
#include "taot/planner/problem.h"
#include "taot/planner/scorecard.h"

namespace taot::simranks {

// The simulated job's problem, made once for every round it scores: rank r on node
// r / ranks_per_node (node names node-0, node-1, ...).
absl::StatusOr<std::shared_ptr<const Problem>> SimulatedProblem(int ranks, int experts, int ranks_per_node,
                                                                int slots_per_rank);

// The scorecard of `plan`, valid for `load` on `problem`.
Scorecard ScoreRound(std::shared_ptr<const Problem> problem, LoadMatrix load, const Plan& plan);

// "step   0 layer  1  imbalance  70.0% ->   1.9%  transfers  3 intra  1 inter  tokens across
// nodes    1234  daemon v7 00000000deadbeef", and "  FALLBACK: why" when the daemon did not
// plan the layer.
std::string FormatRound(int64_t step, int layer, const Scorecard& score, const client::LayerPlan& plan);

struct Summary {
  int rounds = 0;
  int ranks = 0;
  int fallback_rounds = 0;  // rank 0's plan was not the daemon's
  int mismatched = 0;       // (round, rank)s whose (version, hash) differs from rank 0's
  double p50_us = 0, p99_us = 0;
};

// `latencies_us` in any order.
Summary Summarize(int rounds, int ranks, int fallback_rounds, int mismatched, std::vector<double> latencies_us);
std::string FormatSummary(const Summary& summary);

}  // namespace taot::simranks

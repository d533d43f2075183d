// Exact transport for a general cost matrix: a min-cost flow solver.
#pragma once

#include <cstdint>
#include <span>

#include "taot/planner/solvers/transport.h"

namespace taot {

// Supplies m = supply.size(), demands n = demand.size(), cost[i * n + j] >= 0 and finite.
// Successive shortest paths with Johnson potentials (Dijkstra on a dense graph of m + n + 2
// nodes): every augmentation is a cheapest path in the residual graph, so the final flow is a
// minimum-cost flow of value min(total supply, total demand). Each augmentation empties a
// supply, fills a demand or cancels a flow, so their number is O(m + n) in practice, each
// O((m + n)^2). Ties go to the lowest index, which makes the result deterministic.
TransportPlan SolveMinCostTransport(std::span<const int64_t> supply, std::span<const int64_t> demand,
                                    std::span<const double> cost);

}  // namespace taot

// Exact optimal transport on a two-level tree metric, with no LP.
#pragma once

#include <cstdint>
#include <span>

#include "taot/planner/solvers/transport.h"
#include "taot/planner/topology.h"

namespace taot {

// Supply and demand live on ranks (one entry per rank; a rank may have both). Moving one unit
// costs 0 on the same rank, costs.intra inside a node and costs.inter across nodes.
//
// On a tree metric the cost of a transport plan is the sum over tree edges of the flow through
// them; the flow out of any subtree is at least its unmatched surplus, and matching greedily
// bottom-up (same rank, then same node, then across nodes) meets that bound on every edge at
// once, so it is optimal. Runs in O(R) after the caller's arrays; flows come out in a fixed
// order (by level, then rank), so the result is deterministic.
TransportPlan SolveTreeTransport(const Topology& topology, const TreeCosts& costs,
                                 std::span<const int64_t> supply,
                                 std::span<const int64_t> demand);

}  // namespace taot

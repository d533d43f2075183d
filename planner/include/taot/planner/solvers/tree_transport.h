// Exact optimal transport on a two-level tree metric, with no LP.
#pragma once

#include <algorithm>
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
// once, so it is optimal. Runs in O(R); flows come out in a fixed order (by level, then rank),
// so the result is deterministic.
TransportPlan SolveTreeTransport(const Topology& topology, const TreeCosts& costs, std::span<const int64_t> supply,
                                 std::span<const int64_t> demand);

// The same matching for hot loops: no allocation, `supply` and `demand` are consumed in place,
// and each flow goes to emit(from, to, amount), which must not read `supply` or `demand` (the
// demand being served is written back once it is met). `demand_ranks` lists every rank with demand,
// grouped by node (e.g. in (node, rank) order); the work is O(|demand_ranks| plus the ranks of
// their nodes plus R), so a few demands (an expert's home and guests) cost one pass over R.
// A `sink` rank (optional) takes whatever is left after the node level, without flows: when
// supply and demand balance and only the other ranks' flows matter, the cross-node pass then
// stops as soon as they are served.
template <typename Emit>
void MatchOnTree(const Topology& topology, std::span<int64_t> supply, std::span<int64_t> demand,
                 std::span<const int> demand_ranks, Emit&& emit, int sink = -1) {
  auto move = [&](int s, int d) {
    const int64_t amount = std::min(supply[s], demand[d]);
    supply[s] -= amount;
    demand[d] -= amount;
    emit(s, d, amount);
  };
  // Fills the demands of `demands` from the supplies of `supplies`, both in order. A move
  // changes only its own supply and demand, so each pointer moves on only past what it emptied.
  // The demand being served stays in a register until it is met (written back then): this loop
  // is most of the token split's time, a move per assignment of the plan.
  auto match = [&](auto s, auto s_end, auto d, auto d_end) {
    int64_t* const supplies = supply.data();
    int64_t* const demands = demand.data();
    for (; d != d_end; ++d) {
      int64_t want = demands[*d];
      while (want > 0) {
        while (s != s_end && supplies[*s] == 0) ++s;
        if (s == s_end) {
          demands[*d] = want;
          return;
        }
        const int64_t have = supplies[*s];
        if (have <= want) {  // the supply is emptied: step past it without reading it again
          supplies[*s] = 0;
          want -= have;
          emit(*s, *d, have);
          ++s;
        } else {
          supplies[*s] = have - want;
          emit(*s, *d, want);
          want = 0;
        }
      }
      demands[*d] = 0;
    }
  };
  for (int d : demand_ranks) {
    if (supply[d] > 0 && demand[d] > 0) move(d, d);
  }
  for (auto run = demand_ranks.begin(); run != demand_ranks.end();) {
    const int node = topology.node_of(*run);
    auto run_end = run;
    while (run_end != demand_ranks.end() && topology.node_of(*run_end) == node) ++run_end;
    std::span<const int> local = topology.ranks_of_node(node);
    match(local.begin(), local.end(), run, run_end);
    run = run_end;
  }
  if (sink >= 0) demand[sink] = 0;
  // Every rank, in rank order, counted rather than read from topology.all_ranks(): the supply
  // scan is then a plain walk along `supply`.
  struct RankCounter {
    int rank;
    int operator*() const { return rank; }
    RankCounter& operator++() {
      ++rank;
      return *this;
    }
    bool operator==(const RankCounter&) const = default;
  };
  match(RankCounter{0}, RankCounter{topology.ranks()}, demand_ranks.begin(), demand_ranks.end());
}

}  // namespace taot

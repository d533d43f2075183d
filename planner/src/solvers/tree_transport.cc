#include "taot/planner/solvers/tree_transport.h"

#include <algorithm>
#include <vector>

namespace taot {
namespace {

// Matches remaining supply to remaining demand among `ranks`, in rank order, each move costing
// `unit_cost`.
template <typename Ranks>
void MatchGreedily(const Ranks& ranks, std::vector<int64_t>& supply, std::vector<int64_t>& demand,
                   double unit_cost, TransportPlan& out) {
  auto s = ranks.begin();
  auto d = ranks.begin();
  while (true) {
    while (s != ranks.end() && supply[*s] == 0) ++s;
    while (d != ranks.end() && demand[*d] == 0) ++d;
    if (s == ranks.end() || d == ranks.end()) return;
    const int64_t amount = std::min(supply[*s], demand[*d]);
    supply[*s] -= amount;
    demand[*d] -= amount;
    out.flows.push_back({*s, *d, amount});
    out.cost += unit_cost * static_cast<double>(amount);
  }
}

// The ranks 0..R-1 as a range, for the cross-node level.
struct AllRanks {
  struct Iter {
    int r;
    int operator*() const { return r; }
    Iter& operator++() {
      ++r;
      return *this;
    }
    bool operator==(const Iter&) const = default;
  };
  int n;
  Iter begin() const { return {0}; }
  Iter end() const { return {n}; }
};

}  // namespace

TransportPlan SolveTreeTransport(const Topology& topology, const TreeCosts& costs,
                                 std::span<const int64_t> supply,
                                 std::span<const int64_t> demand) {
  TransportPlan out;
  std::vector<int64_t> s(supply.begin(), supply.end());
  std::vector<int64_t> d(demand.begin(), demand.end());
  for (int r = 0; r < topology.ranks(); ++r) {
    const int64_t amount = std::min(s[r], d[r]);
    if (amount == 0) continue;
    s[r] -= amount;
    d[r] -= amount;
    out.flows.push_back({r, r, amount});
  }
  for (int n = 0; n < topology.nodes(); ++n) {
    MatchGreedily(topology.ranks_of_node(n), s, d, costs.intra, out);
  }
  MatchGreedily(AllRanks{topology.ranks()}, s, d, costs.inter, out);
  return out;
}

}  // namespace taot

#include "planners/cycle_cancel.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>

namespace taot::planners {
namespace {

class PieceGraph {
 public:
  PieceGraph(const PlanRequest& request, const std::vector<GuestShare>& pieces)
      : request_(request), pieces_(pieces) {}

  // A cycle closed by piece `closing` over the forest of the pieces in `forest`, as the list
  // of pieces in order around it, or empty.
  std::vector<int> Cycle(const std::vector<int>& forest, int closing) const {
    const int R = request_.ranks();
    std::vector<std::vector<std::pair<int, int>>> adj(static_cast<size_t>(R));  // (rank, piece)
    for (int p : forest) {
      const int a = request_.home_of(pieces_[p].expert), b = pieces_[p].rank;
      adj[a].push_back({b, p});
      adj[b].push_back({a, p});
    }
    const int from = pieces_[closing].rank, to = request_.home_of(pieces_[closing].expert);
    // Breadth-first search for the tree path from the guest back to the home.
    std::vector<int> via(static_cast<size_t>(R), -2);
    std::vector<int> queue = {from};
    via[from] = -1;
    for (size_t q = 0; q < queue.size() && via[to] == -2; ++q) {
      const int v = queue[q];
      for (auto [w, p] : adj[v]) {
        if (via[w] != -2) continue;
        via[w] = p;
        queue.push_back(w);
      }
    }
    if (via[to] == -2) return {};
    std::vector<int> cycle = {closing};
    for (int v = to; v != from;) {
      const int p = via[v];
      cycle.push_back(p);
      const int a = request_.home_of(pieces_[p].expert), b = pieces_[p].rank;
      v = v == a ? b : a;
    }
    return cycle;
  }

 private:
  const PlanRequest& request_;
  const std::vector<GuestShare>& pieces_;
};

struct Shift {
  std::vector<int> sign;  // per cycle position: +1 grows, -1 shrinks
  int64_t delta = 0;
  double gain = 0;  // cost of the pieces that reach zero
};

}  // namespace

void CancelCycles(const PlanRequest& request, const std::vector<int64_t>& expert_totals,
                  const std::vector<Replica>& resident, std::vector<GuestShare>& pieces) {
  const Topology& topo = request.topology;
  auto cost = [&](const GuestShare& p) {
    const bool kept = std::binary_search(resident.begin(), resident.end(),
                                         Replica{static_cast<int32_t>(p.expert), static_cast<int32_t>(p.rank)});
    return kept ? 0.0 : topo.cost(request.home_of(p.expert), p.rank);
  };
  std::vector<int64_t> left = expert_totals;
  for (const GuestShare& p : pieces) left[p.expert] -= p.tokens;

  for (bool changed = true; changed;) {
    changed = false;
    // Cheap pieces join the forest first, so a cycle is closed by the dearest piece on it.
    std::vector<int> order(pieces.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return cost(pieces[a]) < cost(pieces[b]); });
    PieceGraph graph(request, pieces);
    std::vector<int> forest;
    for (int closing : order) {
      const std::vector<int> cycle = graph.Cycle(forest, closing);
      if (cycle.empty()) {
        forest.push_back(closing);
        continue;
      }
      // Signs that keep every rank's load: going around, a rank between two pieces that both
      // leave it (or both arrive) flips the sign, one leaving and one arriving keeps it.
      const size_t n = cycle.size();
      std::vector<int> sign(n);
      sign[0] = 1;
      // v_0 is the closing piece's guest, v_1 its home, where the tree path starts.
      int at = request.home_of(pieces[cycle[0]].expert);
      for (size_t i = 1; i <= n; ++i) {
        const GuestShare& prev = pieces[cycle[i - 1]];
        const GuestShare& next = pieces[cycle[i % n]];
        const int prev_dir = at == prev.rank ? 1 : -1;  // +1: tokens arrive at `at`
        const int next_dir = at == next.rank ? 1 : -1;
        const int s = -sign[i - 1] * prev_dir * next_dir;
        if (i == n) {
          if (s != sign[0]) sign.clear();  // inconsistent: no load-neutral shift here
          break;
        }
        sign[i] = s;
        at = at == request.home_of(next.expert) ? next.rank : request.home_of(next.expert);
      }
      if (sign.empty()) {
        forest.push_back(closing);
        continue;
      }
      std::optional<Shift> best;
      for (int orientation : {1, -1}) {
        Shift shift;
        shift.sign = sign;
        for (int& s : shift.sign) s *= orientation;
        int64_t delta = std::numeric_limits<int64_t>::max();
        for (size_t i = 0; i < n; ++i) {
          if (shift.sign[i] < 0) delta = std::min(delta, pieces[cycle[i]].tokens);
        }
        // An expert whose pieces grow on net must have the tokens.
        for (size_t i = 0; i < n; ++i) {
          const int e = pieces[cycle[i]].expert;
          int net = 0;
          for (size_t j = 0; j < n; ++j) net += pieces[cycle[j]].expert == e ? shift.sign[j] : 0;
          if (net > 0) delta = std::min(delta, left[e] / net);
        }
        if (delta <= 0) continue;
        shift.delta = delta;
        for (size_t i = 0; i < n; ++i) {
          if (shift.sign[i] < 0 && pieces[cycle[i]].tokens == delta) shift.gain += cost(pieces[cycle[i]]);
        }
        if (shift.gain > 0 && (!best || shift.gain > best->gain)) best = shift;
      }
      if (!best) {
        forest.push_back(closing);
        continue;
      }
      for (size_t i = 0; i < n; ++i) {
        GuestShare& p = pieces[cycle[i]];
        p.tokens += best->sign[i] * best->delta;
        left[p.expert] -= best->sign[i] * best->delta;
      }
      pieces.erase(std::remove_if(pieces.begin(), pieces.end(), [](const GuestShare& p) { return p.tokens == 0; }),
                   pieces.end());
      changed = true;
      break;
    }
  }
}

}  // namespace taot::planners

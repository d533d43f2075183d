#include "planners/taot_placement.h"

#include <algorithm>
#include <numeric>
#include <tuple>

#include "taot/planner/solvers/min_cost_transport.h"
#include "taot/planner/solvers/tree_transport.h"

namespace taot::planners {

Placement::Placement(const PlanRequest& request, const LoadSums& sums)
    : request_(request), sums_(sums) {
  const int R = request.ranks();
  resident_.assign(static_cast<size_t>(request.experts) * R, 0);
  for (const Replica& r : request.resident) resident_[static_cast<size_t>(r.expert) * R + r.rank] = 1;
}

void Placement::Reset(int64_t cap) {
  const int R = request_.ranks();
  State& st = state_;
  st.surplus.assign(static_cast<size_t>(R), 0);
  st.spare.assign(static_cast<size_t>(R), 0);
  for (int r = 0; r < R; ++r) {
    const int64_t l = sums_.rank_loads[r];
    (l > cap ? st.surplus[r] : st.spare[r]) = l > cap ? l - cap : cap - l;
  }
  st.expert_left = sums_.expert_totals;
  st.free_slots.assign(static_cast<size_t>(R), request_.slots_per_rank);
  st.pieces.clear();
  st.cost = 0;
}

void Placement::UseResident(State& st) const {
  std::vector<Replica> resident = request_.resident;
  std::sort(resident.begin(), resident.end());
  for (const Replica& r : resident) {
    const int h = request_.home_of(r.expert);
    const int64_t amount =
        std::min({st.surplus[h], st.spare[r.rank], st.expert_left[r.expert]});
    if (amount <= 0 || st.free_slots[r.rank] == 0) continue;
    st.pieces.push_back({r.expert, r.rank, amount});
    st.surplus[h] -= amount;
    st.spare[r.rank] -= amount;
    st.expert_left[r.expert] -= amount;
    --st.free_slots[r.rank];
  }
}

std::vector<int> Placement::NodeOrder(const State& st) const {
  const Topology& topo = request_.topology;
  const int R = request_.ranks();
  std::vector<int64_t> exports(static_cast<size_t>(topo.nodes()), 0);
  if (topo.tree_costs()) {
    for (const TransportFlow& f : SolveTreeTransport(topo, *topo.tree_costs(), st.surplus, st.spare).flows) {
      if (!topo.same_node(f.from, f.to)) exports[topo.node_of(f.from)] += f.amount;
    }
  } else {
    std::vector<int> hot, cold;
    for (int r = 0; r < R; ++r) {
      if (st.surplus[r] > 0) hot.push_back(r);
      if (st.spare[r] > 0) cold.push_back(r);
    }
    std::vector<int64_t> supply, demand;
    std::vector<double> cost;
    for (int h : hot) supply.push_back(st.surplus[h]);
    for (int c : cold) demand.push_back(st.spare[c]);
    for (int h : hot) {
      for (int c : cold) cost.push_back(topo.cost(h, c));
    }
    for (const TransportFlow& f : SolveMinCostTransport(supply, demand, cost).flows) {
      if (!topo.same_node(hot[f.from], cold[f.to])) exports[topo.node_of(hot[f.from])] += f.amount;
    }
  }
  std::vector<int> order(static_cast<size_t>(topo.nodes()));
  std::iota(order.begin(), order.end(), 0);
  // Self-sufficient nodes first (they only use their own room), then exporters, largest first.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return std::make_tuple(exports[a] > 0, -exports[a]) < std::make_tuple(exports[b] > 0, -exports[b]);
  });
  return order;
}

bool Placement::InScope(int h, int c, Scope scope) const {
  switch (scope) {
    case Scope::kSameNode:
      return request_.topology.same_node(h, c);
    case Scope::kOtherNodes:
      return !request_.topology.same_node(h, c);
    case Scope::kAnywhere:
      return true;
  }
  return false;
}

int Placement::PieceIndex(const State& st, int expert, int rank) const {
  for (size_t i = 0; i < st.pieces.size(); ++i) {
    if (st.pieces[i].expert == expert && st.pieces[i].rank == rank) return static_cast<int>(i);
  }
  return -1;
}

int64_t Placement::CoverRank(State& st, int h, Scope scope) const {
  const int R = request_.ranks();
  const int per_rank = request_.experts_per_rank();
  const int first = h * per_rank;
  // Growing a replica already placed moves no more weights.
  for (Piece& p : st.pieces) {
    if (st.surplus[h] == 0) break;
    if (request_.home_of(p.expert) != h || !InScope(h, p.rank, scope)) continue;
    const int64_t add = std::min({st.surplus[h], st.expert_left[p.expert], st.spare[p.rank]});
    p.tokens += add;
    st.surplus[h] -= add;
    st.expert_left[p.expert] -= add;
    st.spare[p.rank] -= add;
  }
  while (st.surplus[h] > 0) {
    int e = first;
    for (int x = first + 1; x < first + per_rank; ++x) {
      if (st.expert_left[x] > st.expert_left[e]) e = x;
    }
    if (st.expert_left[e] == 0) break;
    const int64_t want = std::min(st.surplus[h], st.expert_left[e]);
    // Best fit: the cheapest rank that takes the whole piece, the tightest of those; failing
    // that, the roomiest rank (the biggest piece), the cheapest of those.
    int best = -1;
    auto key = [&](int c) {
      const bool fits = st.spare[c] >= want;
      const double cost = resident_[static_cast<size_t>(e) * R + c] ? 0.0 : request_.topology.cost(h, c);
      return std::make_tuple(!fits, fits ? cost : 0.0, fits ? st.spare[c] : -st.spare[c], cost);
    };
    for (int c = 0; c < R; ++c) {
      if (c == h || st.spare[c] == 0 || st.free_slots[c] == 0 || !InScope(h, c, scope)) continue;
      if (PieceIndex(st, e, c) >= 0) continue;
      if (best < 0 || key(c) < key(best)) best = c;
    }
    if (best < 0) break;
    const int64_t amount = std::min(want, st.spare[best]);
    st.cost += resident_[static_cast<size_t>(e) * R + best] ? 0.0 : request_.topology.cost(h, best);
    st.pieces.push_back({e, best, amount});
    st.surplus[h] -= amount;
    st.expert_left[e] -= amount;
    st.spare[best] -= amount;
    --st.free_slots[best];
  }
  return st.surplus[h];
}

void Placement::CoverNode(State& st, int node) const {
  std::vector<int> hot;
  for (int r : request_.topology.ranks_of_node(node)) {
    if (st.surplus[r] > 0) hot.push_back(r);
  }
  if (hot.empty()) return;
  std::stable_sort(hot.begin(), hot.end(), [&](int a, int b) { return st.surplus[a] > st.surplus[b]; });
  const int m = std::min<int>(static_cast<int>(hot.size()), kMaxEnumerated);
  State best;
  std::tuple<int64_t, double> best_key{-1, 0};
  for (unsigned mask = 0; mask < (1u << m); ++mask) {
    State trial = st;
    for (int i = 0; i < static_cast<int>(hot.size()); ++i) {
      if (i < m && (mask >> i & 1u)) continue;
      CoverRank(trial, hot[i], Scope::kSameNode);
    }
    int64_t unmet = 0;
    for (int h : hot) {
      if (trial.surplus[h] > 0) unmet += CoverRank(trial, h, Scope::kOtherNodes);
    }
    const std::tuple<int64_t, double> key{unmet, trial.cost};
    if (std::get<0>(best_key) < 0 || key < best_key) {
      best_key = key;
      best = std::move(trial);
    }
  }
  st = std::move(best);
}

bool Placement::Place(int64_t cap, std::vector<Piece>& pieces) {
  Reset(cap);
  UseResident(state_);
  for (int node : NodeOrder(state_)) CoverNode(state_, node);
  bool done = true;
  for (int h = 0; h < request_.ranks(); ++h) {
    if (state_.surplus[h] > 0 && CoverRank(state_, h, Scope::kAnywhere) > 0) done = false;
  }
  pieces = state_.pieces;
  return done;
}

}  // namespace taot::planners

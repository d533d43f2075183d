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

double Placement::PieceCost(int h, int e, int c) const {
  return resident_[static_cast<size_t>(e) * request_.ranks() + c] ? 0.0 : request_.topology.cost(h, c);
}

void Placement::AddPiece(State& st, int h, int e, int c, int64_t amount) const {
  st.cost += PieceCost(h, e, c);
  st.pieces.push_back({e, c, amount});
  st.surplus[h] -= amount;
  st.expert_left[e] -= amount;
  st.spare[c] -= amount;
  --st.free_slots[c];
}

int Placement::LargestExpert(const State& st, int h) const {
  const int per_rank = request_.experts_per_rank();
  int e = h * per_rank;
  for (int x = e + 1; x < (h + 1) * per_rank; ++x) {
    if (st.expert_left[x] > st.expert_left[e]) e = x;
  }
  return st.expert_left[e] > 0 ? e : -1;
}

bool Placement::CanHost(const State& st, int h, int e, int c, Scope scope) const {
  return c != h && st.spare[c] > 0 && st.free_slots[c] > 0 && InScope(h, c, scope) &&
         PieceIndex(st, e, c) < 0;
}

int Placement::BestFitBin(const State& st, int h, int e, int64_t want, Scope scope) const {
  // The cheapest rank that takes the whole piece, the tightest of those; failing that, the
  // roomiest rank (the biggest piece), the cheapest of those.
  int best = -1;
  auto key = [&](int c) {
    const bool fits = st.spare[c] >= want;
    const double cost = PieceCost(h, e, c);
    return std::make_tuple(!fits, fits ? cost : 0.0, fits ? st.spare[c] : -st.spare[c], cost);
  };
  for (int c = 0; c < request_.ranks(); ++c) {
    if (!CanHost(st, h, e, c, scope)) continue;
    if (best < 0 || key(c) < key(best)) best = c;
  }
  return best;
}

void Placement::GrowPieces(State& st, int h, Scope scope) const {
  for (Piece& p : st.pieces) {
    if (st.surplus[h] == 0) return;
    if (request_.home_of(p.expert) != h || !InScope(h, p.rank, scope)) continue;
    const int64_t add = std::min({st.surplus[h], st.expert_left[p.expert], st.spare[p.rank]});
    p.tokens += add;
    st.surplus[h] -= add;
    st.expert_left[p.expert] -= add;
    st.spare[p.rank] -= add;
  }
}

int64_t Placement::CoverRank(State& st, int h, Scope scope) const {
  GrowPieces(st, h, scope);
  while (st.surplus[h] > 0) {
    const int e = LargestExpert(st, h);
    if (e < 0) break;
    const int64_t want = std::min(st.surplus[h], st.expert_left[e]);
    const int c = BestFitBin(st, h, e, want, scope);
    if (c < 0) break;
    AddPiece(st, h, e, c, std::min(want, st.spare[c]));
  }
  return st.surplus[h];
}

bool Placement::PlaceWhole(State& st, int h, Scope scope) const {
  GrowPieces(st, h, scope);
  if (st.surplus[h] == 0) return true;
  const int e = LargestExpert(st, h);
  if (e < 0 || st.expert_left[e] < st.surplus[h]) return false;
  const int c = BestFitBin(st, h, e, st.surplus[h], scope);
  if (c < 0 || st.spare[c] < st.surplus[h]) return false;
  AddPiece(st, h, e, c, st.surplus[h]);
  return true;
}

void Placement::SplitCover(State& st, int h) const {
  // Cover with j pieces inside the node (the biggest first), the rest from other nodes; keep the
  // cheapest j. Small pieces inside the node add up: past λ of them, one cross-node piece wins.
  GrowPieces(st, h, Scope::kSameNode);
  State inside = st;
  State best;
  bool have_best = false;
  while (true) {
    State attempt = inside;
    if (attempt.surplus[h] > 0) CoverRank(attempt, h, Scope::kOtherNodes);
    const auto key = std::make_tuple(attempt.surplus[h], attempt.cost);
    if (!have_best || key < std::make_tuple(best.surplus[h], best.cost)) {
      best = std::move(attempt);
      have_best = true;
    }
    if (inside.surplus[h] == 0) break;
    const int e = LargestExpert(inside, h);
    if (e < 0) break;
    int c = -1;
    for (int x : request_.topology.ranks_of_node(request_.topology.node_of(h))) {
      if (CanHost(inside, h, e, x, Scope::kSameNode) && (c < 0 || inside.spare[x] > inside.spare[c])) c = x;
    }
    if (c < 0) break;
    AddPiece(inside, h, e, c, std::min({inside.surplus[h], inside.expert_left[e], inside.spare[c]}));
  }
  st = std::move(best);
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
    auto exported = [&](int i) { return i < m && (mask >> i & 1u); };
    const int n = static_cast<int>(hot.size());
    for (int i = 0; i < n; ++i) {
      if (!exported(i)) PlaceWhole(trial, hot[i], Scope::kSameNode);
    }
    for (int i = 0; i < n; ++i) {
      if (!exported(i) && trial.surplus[hot[i]] > 0) SplitCover(trial, hot[i]);
    }
    for (int i = 0; i < n; ++i) {
      if (exported(i)) CoverRank(trial, hot[i], Scope::kOtherNodes);
    }
    int64_t unmet = 0;
    for (int h : hot) unmet += trial.surplus[h];
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

#include "planners/taot_placement.h"

#include <algorithm>
#include <numeric>
#include <optional>
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
  cold_.clear();
  for (int r = 0; r < R; ++r) {
    if (st.spare[r] > 0) cold_.push_back(r);
  }
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

std::vector<int> Placement::NodeOrder(const State& st) {
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
  exports_ = exports;
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

bool Placement::CoverInTwo(State& st, int h, bool allow_same_node) const {
  const Topology& topo = request_.topology;
  const int per_rank = request_.experts_per_rank();
  const int64_t rem = st.surplus[h];
  // Bins by class (0: h's node, 1: other nodes), by increasing room.
  std::vector<int> bins[2];
  for (int c : cold_) {
    if (c == h || st.spare[c] == 0 || st.free_slots[c] == 0) continue;
    const int cls = topo.same_node(h, c) ? 0 : 1;
    if (cls == 0 && !allow_same_node) continue;
    bins[cls].push_back(c);
  }
  for (auto& b : bins) {
    std::stable_sort(b.begin(), b.end(), [&](int x, int y) { return st.spare[x] < st.spare[y]; });
  }
  // The tightest bin of a class with room >= need that can take expert e (and is not `skip`,
  // or is `skip` with `used` tokens already taken from it).
  auto tightest = [&](int cls, int e, int64_t need, int skip, int64_t used) {
    for (int c : bins[cls]) {
      const int64_t room = st.spare[c] - (c == skip ? used : 0);
      if (room < need || PieceIndex(st, e, c) >= 0) continue;
      if (c == skip && st.free_slots[c] < 2) continue;
      return c;
    }
    return -1;
  };
  struct Option {
    double cost = 0;
    int pieces = 0;
    int64_t room_used = 0;  // room of the best-fit bin: smaller is a tighter fit
    Piece first, second;
  };
  std::optional<Option> best;
  auto consider = [&](const Option& o) {
    if (!best || std::make_tuple(o.cost, o.pieces, o.room_used) <
                     std::make_tuple(best->cost, best->pieces, best->room_used)) {
      best = o;
    }
  };
  for (int e = h * per_rank; e < (h + 1) * per_rank; ++e) {
    if (st.expert_left[e] < rem) continue;
    for (int cls = 0; cls < 2; ++cls) {
      const int c = tightest(cls, e, rem, -1, 0);
      if (c >= 0) consider({PieceCost(h, e, c), 1, st.spare[c], {e, c, rem}, {}});
    }
  }
  for (int cls1 = 0; cls1 < 2; ++cls1) {
    if (bins[cls1].empty()) continue;
    const int b1 = bins[cls1].back();
    for (int e1 = h * per_rank; e1 < (h + 1) * per_rank; ++e1) {
      if (st.expert_left[e1] == 0 || PieceIndex(st, e1, b1) >= 0) continue;
      const int64_t a1 = std::min({st.expert_left[e1], st.spare[b1], rem});
      if (a1 == rem) continue;
      const int64_t rem2 = rem - a1;
      for (int e2 = h * per_rank; e2 < (h + 1) * per_rank; ++e2) {
        const int64_t left2 = st.expert_left[e2] - (e2 == e1 ? a1 : 0);
        if (left2 < rem2) continue;
        for (int cls2 = 0; cls2 < 2; ++cls2) {
          const int c2 = tightest(cls2, e2, rem2, e2 == e1 ? -1 : b1, a1);
          if (c2 < 0 || (c2 == b1 && e2 == e1)) continue;
          consider({PieceCost(h, e1, b1) + PieceCost(h, e2, c2), 2, st.spare[c2],
                    {e1, b1, a1}, {e2, c2, rem2}});
        }
      }
    }
  }
  if (!best) return false;
  AddPiece(st, h, best->first.expert, best->first.rank, best->first.tokens);
  if (best->pieces == 2) AddPiece(st, h, best->second.expert, best->second.rank, best->second.tokens);
  return true;
}

void Placement::BestCover(State& st, int h, bool allow_same_node) const {
  GrowPieces(st, h, allow_same_node ? Scope::kAnywhere : Scope::kOtherNodes);
  if (st.surplus[h] == 0) return;
  State two = st;
  const bool covered = CoverInTwo(two, h, allow_same_node);
  if (allow_same_node) {
    SplitCover(st, h);
  } else {
    CoverRank(st, h, Scope::kOtherNodes);
  }
  if (covered && std::make_tuple(two.surplus[h], two.cost) < std::make_tuple(st.surplus[h], st.cost)) {
    st = std::move(two);
  }
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
      if (!exported(i) && trial.surplus[hot[i]] > 0) BestCover(trial, hot[i], true);
    }
    for (int i = 0; i < n; ++i) {
      if (exported(i)) BestCover(trial, hot[i], false);
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
  const std::vector<int> order = NodeOrder(state_);
  // Two orders: nodes that balance themselves first (they keep their own room), or exporters
  // first (they get the roomiest bins elsewhere for their single big cross-node pieces).
  std::optional<State> best;
  for (bool exporters_first : {false, true}) {
    State st = state_;
    std::vector<int> nodes = order;
    if (exporters_first) {
      std::stable_partition(nodes.begin(), nodes.end(), [&](int n) { return exports_[n] > 0; });
    }
    for (int node : nodes) CoverNode(st, node);
    for (int h = 0; h < request_.ranks(); ++h) {
      if (st.surplus[h] > 0) CoverRank(st, h, Scope::kAnywhere);
    }
    int64_t unmet = 0;
    for (int64_t s : st.surplus) unmet += s;
    st.unmet = unmet;
    if (!best || std::make_tuple(st.unmet, st.cost) < std::make_tuple(best->unmet, best->cost)) {
      best = std::move(st);
    }
  }
  pieces = best->pieces;
  return best->unmet == 0;
}

}  // namespace taot::planners

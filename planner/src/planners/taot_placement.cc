#include "planners/taot_placement.h"

#include <algorithm>
#include <array>
#include <limits>
#include <numeric>
#include <tuple>

#include "taot/planner/solvers/min_cost_transport.h"
#include "taot/planner/solvers/tree_transport.h"

namespace taot::planners {

void Placement::Prepare(const PlanRequest& request, const LoadSums& sums) {
  request_ = &request;
  sums_ = &sums;
  tree_ = request.topology().tree_costs().has_value();
  if (tree_) tree_costs_ = *request.topology().tree_costs();
  shapes_ = {{{0, -1, 0, 1}, {1, -1, 0, 1}, {0, 0, 0, 2}, {0, 1, 0, 2}, {1, 0, 0, 2}, {1, 1, 0, 2}}};
  if (tree_) {
    // Every bin of a class costs the same, so CoverInTwo can try shapes cheapest first and stop
    // at the first that covers (and those that tie with it).
    const double unit[2] = {tree_costs_.intra, tree_costs_.inter};
    for (Shape& sh : shapes_) sh.cost = unit[sh.cls1] + (sh.cls2 < 0 ? 0.0 : unit[sh.cls2]);
    std::stable_sort(shapes_.begin(), shapes_.end(), [](const Shape& a, const Shape& b) {
      return std::make_pair(a.cost, a.pieces) < std::make_pair(b.cost, b.pieces);
    });
  }
  resident_ = request.resident;
  std::sort(resident_.begin(), resident_.end());
  st_.held.assign(static_cast<size_t>(request.ranks()) * request.slots_per_rank(), 0);
  sketch_.Resize(request.ranks(), request.experts());
}

// ---------------------------------------------------------------------------------------------
// State changes, all undoable.

void Placement::Reconcile(int c) {
  const int64_t want = IsOpen(c) ? st_.spare[c] : -1;
  const int64_t have = st_.indexed[c];
  if (want == have) return;
  st_.indexed[c] = want;
  std::vector<Bin>& bins = st_.open_other;
  const Bin now{want, c};
  if (have < 0) {
    bins.insert(std::lower_bound(bins.begin(), bins.end(), now), now);
    return;
  }
  auto at = static_cast<size_t>(std::lower_bound(bins.begin(), bins.end(), Bin{have, c}) - bins.begin());
  if (want < 0) {
    bins.erase(bins.begin() + static_cast<std::ptrdiff_t>(at));
    return;
  }
  // Rooms change by one piece at a time, so the entry rarely travels far: walk it there.
  while (at > 0 && now < bins[at - 1]) {
    bins[at] = bins[at - 1];
    --at;
  }
  while (at + 1 < bins.size() && bins[at + 1] < now) {
    bins[at] = bins[at + 1];
    ++at;
  }
  bins[at] = now;
}

void Placement::Shift(int h, int e, int c, int64_t amount, int slots) {
  st_.surplus[h] -= amount;
  st_.left[e] -= amount;
  st_.spare[c] -= amount;
  st_.slots[c] -= slots;
  // Bins of the node being covered are only ever asked for by that node's own ranks, which
  // skip them in st_.open_other, so they are reconciled once when the node is done.
  if (tree_ && request_->topology().node_of(c) != deferred_node_) Reconcile(c);
}

void Placement::AddPiece(int h, int e, int c, int64_t amount) {
  Undo u{Undo::kAdd, h};
  u.expert = e;
  u.bin = c;
  u.amount = amount;
  u.old_last = st_.last[h];
  Log(u);
  const int K = request_->slots_per_rank();
  const int index = static_cast<int>(st_.pieces.size());
  st_.cost += PieceCost(h, e, c);
  st_.held[static_cast<size_t>(c) * K + K - st_.slots[c]] = e;
  st_.pieces.push_back({e, c, amount});
  st_.next.push_back(-1);
  (st_.last[h] < 0 ? st_.first[h] : st_.next[st_.last[h]]) = index;
  st_.last[h] = index;
  Shift(h, e, c, amount, 1);
}

void Placement::GrowPiece(int h, int piece, int64_t amount) {
  Undo u{Undo::kGrow, h};
  u.piece = piece;
  u.amount = amount;
  Log(u);
  Piece& p = st_.pieces[piece];
  p.tokens += amount;
  Shift(h, p.expert, p.rank, amount, 0);
}

void Placement::SetRoom(int r, int64_t surplus, int64_t spare) {
  Undo u{Undo::kRoom, r};
  u.surplus = surplus;
  u.spare = spare;
  u.old_surplus = st_.surplus[r];
  u.old_spare = st_.spare[r];
  Log(u);
  st_.surplus[r] = surplus;
  st_.spare[r] = spare;
  if (tree_ && request_->topology().node_of(r) != deferred_node_) Reconcile(r);
}

void Placement::AddDebt(double debt) {
  Undo u{Undo::kDebt, 0};
  u.debt = debt;
  Log(u);
  st_.debt += debt;
}

void Placement::Log(Undo& u) {
  if (!logging_) return;
  u.old_cost = st_.cost;
  u.old_debt = st_.debt;
  log_.push_back(u);
}

void Placement::Rollback(size_t mark, std::vector<Undo>* redo) {
  const size_t first_undone = redo != nullptr ? redo->size() : 0;
  while (log_.size() > mark) {
    const Undo u = log_.back();
    log_.pop_back();
    switch (u.kind) {
      case Undo::kAdd:
        st_.pieces.pop_back();
        st_.next.pop_back();
        (u.old_last < 0 ? st_.first[u.rank] : st_.next[u.old_last]) = -1;
        st_.last[u.rank] = u.old_last;
        Shift(u.rank, u.expert, u.bin, -u.amount, -1);
        break;
      case Undo::kGrow: {
        Piece& p = st_.pieces[u.piece];
        p.tokens -= u.amount;
        Shift(u.rank, p.expert, p.rank, -u.amount, 0);
        break;
      }
      case Undo::kRoom:
        st_.surplus[u.rank] = u.old_surplus;
        st_.spare[u.rank] = u.old_spare;
        if (tree_ && request_->topology().node_of(u.rank) != deferred_node_) Reconcile(u.rank);
        break;
      case Undo::kDebt:
        break;
    }
    st_.cost = u.old_cost;
    st_.debt = u.old_debt;
    if (redo != nullptr) redo->push_back(u);
  }
  if (redo != nullptr) std::reverse(redo->begin() + static_cast<std::ptrdiff_t>(first_undone), redo->end());
}

void Placement::Redo(const std::vector<Undo>& changes) {
  for (const Undo& u : changes) {
    switch (u.kind) {
      case Undo::kAdd:
        AddPiece(u.rank, u.expert, u.bin, u.amount);
        break;
      case Undo::kGrow:
        GrowPiece(u.rank, u.piece, u.amount);
        break;
      case Undo::kRoom:
        SetRoom(u.rank, u.surplus, u.spare);
        break;
      case Undo::kDebt:
        AddDebt(u.debt);
        break;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Queries.

double Placement::PieceCost(int h, int e, int c) const {
  if (resident_.empty() && tree_) return request_->topology().same_node(h, c) ? tree_costs_.intra : tree_costs_.inter;
  const bool resident = !resident_.empty() &&
                        std::binary_search(resident_.begin(), resident_.end(),
                                           Replica{static_cast<int32_t>(e), static_cast<int32_t>(c)});
  return resident ? 0.0 : request_->topology().cost(h, c);
}

bool Placement::Holds(int e, int c) const {
  const int K = request_->slots_per_rank();
  const int* held = st_.held.data() + static_cast<size_t>(c) * K;
  for (int i = 0, n = K - st_.slots[c]; i < n; ++i) {
    if (held[i] == e) return true;
  }
  return false;
}

bool Placement::InScope(int h, int c, Scope scope) const {
  switch (scope) {
    case Scope::kSameNode:
      return request_->topology().same_node(h, c);
    case Scope::kOtherNodes:
      return !request_->topology().same_node(h, c);
    case Scope::kAnywhere:
      return true;
  }
  return false;
}

bool Placement::CanHost(int h, int e, int c, Scope scope) const {
  return c != h && IsOpen(c) && InScope(h, c, scope) && !Holds(e, c);
}

int Placement::LargestExpert(int h) const {
  const int per_rank = request_->experts_per_rank();
  int e = h * per_rank;
  for (int x = e + 1; x < (h + 1) * per_rank; ++x) {
    if (st_.left[x] > st_.left[e]) e = x;
  }
  return st_.left[e] > 0 ? e : -1;
}

int Placement::BestFitOtherNodes(int h, int e, int64_t want) const {
  // Every bin of another node costs the same (the inter-node cost) on a two-level topology, so
  // best fit is the first eligible bin at or above `want` in (room, rank) order; failing that,
  // the roomiest eligible bin, the lowest rank among equals.
  auto eligible = [&](const Bin& b) {
    return !request_->topology().same_node(h, b.second) && !Holds(e, b.second);
  };
  auto it = std::lower_bound(st_.open_other.begin(), st_.open_other.end(), Bin{want, -1});
  for (; it != st_.open_other.end(); ++it) {
    if (eligible(*it)) return it->second;
  }
  int best = -1;
  int64_t best_room = -1;
  for (auto rit = st_.open_other.rbegin(); rit != st_.open_other.rend(); ++rit) {
    if (best >= 0 && rit->first < best_room) break;
    if (eligible(*rit)) {
      best = rit->second;
      best_room = rit->first;
    }
  }
  return best;
}

int Placement::BestFitBin(int h, int e, int64_t want, Scope scope) const {
  if (scope == Scope::kOtherNodes && tree_) return BestFitOtherNodes(h, e, want);
  if (scope == Scope::kSameNode && tree_) {
    // One cost for the whole node: the tightest bin that fits, else the roomiest.
    int best = -1;
    for (int c : request_->topology().ranks_of_node(request_->topology().node_of(h))) {
      if (c == h || !IsOpen(c) || Holds(e, c)) continue;
      const int64_t room = st_.spare[c];
      if (best < 0) {
        best = c;
        continue;
      }
      const int64_t best_room = st_.spare[best];
      if (room >= want ? (best_room < want || room < best_room) : (best_room < want && room > best_room)) {
        best = c;
      }
    }
    return best;
  }
  // The cheapest bin that takes the whole piece, the tightest of those; failing that, the
  // roomiest bin (the biggest piece), the cheapest of those; ties to the lower rank.
  auto key = [&](int c) {
    const bool fits = st_.spare[c] >= want;
    const double cost = PieceCost(h, e, c);
    return std::make_tuple(!fits, fits ? cost : 0.0, fits ? st_.spare[c] : -st_.spare[c], cost);
  };
  const std::vector<int>& candidates =
      scope == Scope::kSameNode ? request_->topology().ranks_of_node(request_->topology().node_of(h))
                                : request_->topology().all_ranks();
  int best = -1;
  for (int c : candidates) {
    if (!CanHost(h, e, c, scope)) continue;
    if (best < 0 || key(c) < key(best)) best = c;
  }
  return best;
}

// ---------------------------------------------------------------------------------------------
// Covers.

void Placement::GrowPieces(int h, Scope scope) {
  for (int i = st_.first[h]; i >= 0; i = st_.next[i]) {
    if (st_.surplus[h] == 0) return;
    const Piece& p = st_.pieces[i];
    if (!InScope(h, p.rank, scope)) continue;
    const int64_t add = std::min({st_.surplus[h], st_.left[p.expert], st_.spare[p.rank]});
    if (add > 0) GrowPiece(h, i, add);
  }
}

void Placement::CoverRank(int h, Scope scope) {
  GrowPieces(h, scope);
  while (st_.surplus[h] > 0) {
    const int e = LargestExpert(h);
    if (e < 0) return;
    const int64_t want = std::min(st_.surplus[h], st_.left[e]);
    const int c = BestFitBin(h, e, want, scope);
    if (c < 0) return;
    AddPiece(h, e, c, std::min(want, st_.spare[c]));
  }
}

void Placement::PlaceWhole(int h) {
  GrowPieces(h, Scope::kSameNode);
  if (st_.surplus[h] == 0) return;
  const int e = LargestExpert(h);
  if (e < 0 || st_.left[e] < st_.surplus[h]) return;
  const int c = BestFitBin(h, e, st_.surplus[h], Scope::kSameNode);
  if (c < 0 || st_.spare[c] < st_.surplus[h]) return;
  AddPiece(h, e, c, st_.surplus[h]);
}

std::optional<Placement::Option> Placement::CoverInTwo(int h) {
  const Topology& topo = request_->topology();
  const int per_rank = request_->experts_per_rank();
  const int64_t rem = st_.surplus[h];
  // Bins by class (0: h's node, 1: other nodes), in (room, rank) order.
  same_bins_.clear();
  for (int c : topo.ranks_of_node(topo.node_of(h))) {
    if (c != h && IsOpen(c)) same_bins_.push_back({st_.spare[c], c});
  }
  std::sort(same_bins_.begin(), same_bins_.end());
  const std::vector<Bin>* other = &st_.open_other;
  if (!tree_) {
    other_bins_.clear();
    for (int c : topo.all_ranks()) {
      if (IsOpen(c) && !topo.same_node(h, c)) other_bins_.push_back({st_.spare[c], c});
    }
    std::sort(other_bins_.begin(), other_bins_.end());
    other = &other_bins_;
  }
  const std::vector<Bin>* bins[2] = {&same_bins_, other};
  auto in_class = [&](int cls, int c) { return cls == 0 || !topo.same_node(h, c); };
  // The tightest bin of a class with room >= need that can take expert e; `skip` already gave
  // `used` tokens to another piece of this option.
  auto tightest = [&](int cls, int e, int64_t need, int skip, int64_t used) {
    const std::vector<Bin>& b = *bins[cls];
    for (auto it = std::lower_bound(b.begin(), b.end(), Bin{need, -1}); it != b.end(); ++it) {
      const int c = it->second;
      if (!in_class(cls, c) || Holds(e, c)) continue;
      if (c == skip && (it->first - used < need || st_.slots[c] < 2)) continue;
      return c;
    }
    return -1;
  };
  auto roomiest = [&](int cls) {
    const std::vector<Bin>& b = *bins[cls];
    for (auto it = b.rbegin(); it != b.rend(); ++it) {
      if (in_class(cls, it->second)) return it->second;
    }
    return -1;
  };
  std::optional<Option> best;
  auto consider = [&](const Option& o) {
    if (!best || std::make_tuple(o.cost, o.pieces, o.tightness) <
                     std::make_tuple(best->cost, best->pieces, best->tightness)) {
      best = o;
    }
  };
  auto one_piece = [&](int cls) {
    for (int e = h * per_rank; e < (h + 1) * per_rank; ++e) {
      if (st_.left[e] < rem) continue;
      const int c = tightest(cls, e, rem, -1, 0);
      if (c >= 0) consider({st_.cost + PieceCost(h, e, c), 1, st_.spare[c], {e, c, rem}, {}});
    }
  };
  // The first piece fills the roomiest bin of class cls1, the second fits tightest in cls2.
  auto two_pieces = [&](int cls1, int cls2) {
    const int b1 = roomiest(cls1);
    if (b1 < 0) return;
    int64_t tried = -1;  // first pieces of one size leave the same rest: weigh it once
    for (int e1 = h * per_rank; e1 < (h + 1) * per_rank; ++e1) {
      if (st_.left[e1] == 0 || Holds(e1, b1)) continue;
      const int64_t a1 = std::min({st_.left[e1], st_.spare[b1], rem});
      if (a1 == rem || a1 == tried) continue;
      tried = a1;
      const int64_t rem2 = rem - a1;
      // Every expert that can give rem2 finds the same bin unless it already holds it, so the
      // first one that finds a bin stands for all.
      for (int e2 = h * per_rank; e2 < (h + 1) * per_rank; ++e2) {
        const int64_t left2 = st_.left[e2] - (e2 == e1 ? a1 : 0);
        if (left2 < rem2) continue;
        const int c2 = tightest(cls2, e2, rem2, e2 == e1 ? -1 : b1, a1);
        if (c2 < 0 || (c2 == b1 && e2 == e1)) continue;
        consider({st_.cost + PieceCost(h, e1, b1) + PieceCost(h, e2, c2), 2, -st_.spare[c2],
                  {e1, b1, a1}, {e2, c2, rem2}});
        break;
      }
    }
  };
  for (const Shape& sh : shapes_) {
    if (tree_ && best && std::make_pair(st_.cost + sh.cost, sh.pieces) > std::make_pair(best->cost, best->pieces)) {
      break;
    }
    if (sh.cls2 < 0) {
      one_piece(sh.cls1);
    } else {
      two_pieces(sh.cls1, sh.cls2);
    }
  }
  return best;
}

// ---------------------------------------------------------------------------------------------
// Sketches: what a cover of h would change, tried without changing the state.

void Placement::Sketch::Resize(int ranks, int experts) {
  touches.clear();
  used.assign(static_cast<size_t>(ranks), 0);
  new_pieces.assign(static_cast<size_t>(ranks), 0);
  taken.assign(static_cast<size_t>(experts), 0);
}

void Placement::Sketch::Start(int hot, int64_t surplus) {
  Truncate(0);
  h = hot;
  rem = surplus;
  cost = 0;
}

void Placement::Sketch::Add(int e, int c, int64_t amount, bool new_piece, double piece_cost) {
  touches.push_back({e, c, amount, new_piece});
  used[c] += amount;
  new_pieces[c] += new_piece;
  taken[e] += amount;
  rem -= amount;
  cost += piece_cost;
}

void Placement::Sketch::Truncate(size_t n) {
  while (touches.size() > n) {
    const Touch& t = touches.back();
    used[t.bin] -= t.amount;
    new_pieces[t.bin] -= t.new_piece;
    taken[t.expert] -= t.amount;
    touches.pop_back();
  }
}

bool Placement::Sketch::Placed(int e, int c) const {
  if (new_pieces[c] == 0) return false;
  for (const Touch& t : touches) {
    if (t.new_piece && t.expert == e && t.bin == c) return true;
  }
  return false;
}

int64_t Placement::SketchRoom(const Sketch& sk, int c) const { return st_.spare[c] - sk.used[c]; }

bool Placement::SketchCanHost(const Sketch& sk, int e, int c) const {
  return c != sk.h && SketchRoom(sk, c) > 0 && st_.slots[c] - sk.new_pieces[c] > 0 && !Holds(e, c) &&
         !sk.Placed(e, c);
}

int Placement::SketchLargestExpert(const Sketch& sk) const {
  const int per_rank = request_->experts_per_rank();
  int best = -1;
  int64_t best_left = 0;
  for (int e = sk.h * per_rank; e < (sk.h + 1) * per_rank; ++e) {
    const int64_t left = st_.left[e] - sk.taken[e];
    if (left > best_left) {
      best = e;
      best_left = left;
    }
  }
  return best;
}

int Placement::SketchBestFitOther(const Sketch& sk, int e, int64_t want) const {
  const Topology& topo = request_->topology();
  // A bin the sketch touched has less room than its place in st_.open_other says, so those few are
  // weighed apart from the untouched ones, which the sorted index answers as usual.
  auto untouched = [&](int c) { return sk.used[c] == 0 && sk.new_pieces[c] == 0; };
  auto eligible = [&](int c) { return !topo.same_node(sk.h, c) && SketchCanHost(sk, e, c); };
  int fit = -1, roomy = -1;
  auto better_fit = [&](int c) {
    return fit < 0 || std::make_pair(SketchRoom(sk, c), c) < std::make_pair(SketchRoom(sk, fit), fit);
  };
  auto roomier = [&](int c) {
    return roomy < 0 || SketchRoom(sk, c) > SketchRoom(sk, roomy) ||
           (SketchRoom(sk, c) == SketchRoom(sk, roomy) && c < roomy);
  };
  if (tree_) {
    for (auto it = std::lower_bound(st_.open_other.begin(), st_.open_other.end(), Bin{want, -1});
         it != st_.open_other.end(); ++it) {
      if (untouched(it->second) && eligible(it->second)) {
        fit = it->second;
        break;
      }
    }
    for (const Touch& t : sk.touches) {
      if (eligible(t.bin) && SketchRoom(sk, t.bin) >= want && better_fit(t.bin)) fit = t.bin;
    }
    if (fit >= 0) return fit;
    for (auto it = st_.open_other.rbegin(); it != st_.open_other.rend(); ++it) {
      if (roomy >= 0 && it->first < SketchRoom(sk, roomy)) break;
      if (untouched(it->second) && eligible(it->second) && roomier(it->second)) roomy = it->second;
    }
    for (const Touch& t : sk.touches) {
      if (eligible(t.bin) && roomier(t.bin)) roomy = t.bin;
    }
    return roomy;
  }
  // A general matrix: BestFitBin's key over every bin, with the sketch's room.
  int best = -1;
  auto key = [&](int c) {
    const int64_t room = SketchRoom(sk, c);
    const bool fits = room >= want;
    const double cost = PieceCost(sk.h, e, c);
    return std::make_tuple(!fits, fits ? cost : 0.0, fits ? room : -room, cost);
  };
  for (int c : request_->topology().all_ranks()) {
    if (eligible(c) && (best < 0 || key(c) < key(best))) best = c;
  }
  return best;
}

void Placement::SketchCoverOtherNodes(Sketch& sk) const {
  const Topology& topo = request_->topology();
  for (int i = st_.first[sk.h]; i >= 0; i = st_.next[i]) {
    if (sk.rem == 0) break;
    const Piece& p = st_.pieces[i];
    if (topo.same_node(sk.h, p.rank)) continue;
    const int64_t add = std::min({sk.rem, st_.left[p.expert] - sk.taken[p.expert], SketchRoom(sk, p.rank)});
    if (add > 0) sk.Add(p.expert, p.rank, add, false, 0.0);
  }
  while (sk.rem > 0) {
    const int e = SketchLargestExpert(sk);
    if (e < 0) return;
    const int64_t want = std::min(sk.rem, st_.left[e] - sk.taken[e]);
    const int c = SketchBestFitOther(sk, e, want);
    if (c < 0) return;
    sk.Add(e, c, std::min(want, SketchRoom(sk, c)), true, PieceCost(sk.h, e, c));
  }
}

bool Placement::NextInside(const Sketch& sk, int& e, int& c) const {
  const Topology& topo = request_->topology();
  e = SketchLargestExpert(sk);
  if (e < 0) return false;
  c = -1;
  for (int x : topo.ranks_of_node(topo.node_of(sk.h))) {
    if (SketchCanHost(sk, e, x) && (c < 0 || SketchRoom(sk, x) > SketchRoom(sk, c))) c = x;
  }
  return c >= 0;
}

int Placement::PlanSplit(int h, double bound, std::tuple<int64_t, double>& best_key) {
  Sketch& sk = sketch_;
  sk.Start(h, st_.surplus[h]);
  int best_j = 0;
  for (int j = 0;; ++j) {
    // Every further j only adds pieces: stop once the pieces inside cost what the best split
    // (or `bound`, an option the caller has) already does.
    if (j > 0 && ((std::get<0>(best_key) == 0 && st_.cost + sk.cost >= std::get<1>(best_key)) ||
                  st_.cost + sk.cost > bound)) {
      break;
    }
    const size_t touched = sk.touches.size();
    const int64_t rem = sk.rem;
    const double cost = sk.cost;
    if (sk.rem > 0) SketchCoverOtherNodes(sk);
    const std::tuple<int64_t, double> key{sk.rem, st_.cost + sk.cost};
    if (j == 0 || key < best_key) {
      best_key = key;
      best_j = j;
    }
    sk.Truncate(touched);
    sk.rem = rem;
    sk.cost = cost;
    int e = -1, c = -1;
    if (sk.rem == 0 || !NextInside(sk, e, c)) break;
    sk.Add(e, c, std::min({sk.rem, st_.left[e] - sk.taken[e], SketchRoom(sk, c)}), true, PieceCost(h, e, c));
  }
  return best_j;
}

void Placement::ApplySplit(int h, int inside) {
  Sketch& sk = sketch_;
  sk.Start(h, st_.surplus[h]);
  for (int j = 0; j < inside; ++j) {
    int e = -1, c = -1;
    NextInside(sk, e, c);
    AddPiece(h, e, c, std::min({st_.surplus[h], st_.left[e], st_.spare[c]}));
  }
  if (st_.surplus[h] > 0) CoverRank(h, Scope::kOtherNodes);
}

std::optional<Placement::Handoff> Placement::PlanHandoff(int h) {
  if (!tree_) return std::nullopt;
  const Topology& topo = request_->topology();
  const int per_rank = request_->experts_per_rank();
  const int64_t rem = st_.surplus[h];
  int e = -1;
  for (int x = h * per_rank; x < (h + 1) * per_rank; ++x) {
    if (st_.left[x] >= rem && (e < 0 || st_.left[x] > st_.left[e])) e = x;
  }
  if (e < 0) return std::nullopt;
  std::optional<Handoff> best;
  std::vector<int64_t>& own = own_;
  own.resize(static_cast<size_t>(per_rank));
  for (int n = 0; n < topo.nodes(); ++n) {
    if (n == topo.node_of(h)) continue;
    // The roomiest rank of the node leaves the least to shed: it is the receiver to weigh.
    int64_t node_room = 0;
    int g = -1;
    for (int r : topo.ranks_of_node(n)) {
      if (!IsOpen(r)) continue;
      node_room += st_.spare[r];
      if (!Holds(e, r) && (g < 0 || st_.spare[r] > st_.spare[g])) g = r;
    }
    if (g < 0) continue;
    const int64_t overflow = rem - st_.spare[g];
    if (overflow <= 0 || node_room - st_.spare[g] < overflow) continue;
    // g sheds its biggest experts to its node-mates, one intra-node piece each.
    for (int i = 0; i < per_rank; ++i) own[i] = st_.left[g * per_rank + i];
    std::sort(own.begin(), own.end(), std::greater<>());
    int sheds = 0;
    int64_t shed = 0;
    while (sheds < per_rank && shed < overflow) shed += own[sheds++];
    if (shed < overflow) continue;
    const double cost = PieceCost(h, e, g) + sheds * tree_costs_.intra;
    if (!best || std::make_tuple(cost, overflow, g) < std::make_tuple(best->cost, best->overflow, best->receiver)) {
      best = Handoff{e, g, rem, overflow, cost};
    }
  }
  return best;
}

bool Placement::CanHandOff(int h) const {
  const int e = LargestExpert(h);
  if (!tree_ || e < 0) return false;
  for (int r = 0; r < request_->ranks(); ++r) {
    if (!request_->topology().same_node(r, h) && IsOpen(r) && 3 * st_.spare[r] >= st_.left[e]) return false;
  }
  return true;
}

std::optional<Placement::Handoff> Placement::PlanCarry(int h, int e) {
  if (!tree_) return std::nullopt;
  const Topology& topo = request_->topology();
  const int per_rank = request_->experts_per_rank();
  std::optional<Handoff> best;
  std::vector<int64_t>& own = own_;
  own.resize(static_cast<size_t>(per_rank));
  std::vector<std::pair<int64_t, int>>& mates = mates_;  // (room, slots) of g's open node-mates
  for (int n = 0; n < topo.nodes(); ++n) {
    if (n == topo.node_of(h)) continue;
    int g = -1;
    int64_t pending = 0;  // earlier receivers' sheds will use the node's room too
    for (int r : topo.ranks_of_node(n)) {
      pending += std::max<int64_t>(st_.surplus[r], 0);
      if (IsOpen(r) && !Holds(e, r) && (g < 0 || st_.spare[r] > st_.spare[g])) g = r;
    }
    if (g < 0) continue;
    mates.clear();
    for (int r : topo.ranks_of_node(n)) {
      if (r != g && IsOpen(r)) mates.push_back({st_.spare[r], st_.slots[r]});
    }
    std::sort(mates.begin(), mates.end(), std::greater<>());
    for (auto& [room, slots] : mates) {
      const int64_t taken = std::min(room, pending);
      room -= taken;
      pending -= taken;
    }
    // g takes its room plus its biggest experts, each shed whole into a node-mate's room and
    // slot (first fit, decreasing), as far as they go.
    for (int i = 0; i < per_rank; ++i) own[i] = st_.left[g * per_rank + i];
    std::sort(own.begin(), own.end(), std::greater<>());
    int64_t shed = 0;
    int fits = 0;
    for (; fits < per_rank && own[fits] > 0; ++fits) {
      auto bin = std::find_if(mates.begin(), mates.end(),
                              [&](const auto& m) { return m.second > 0 && m.first >= own[fits]; });
      if (bin == mates.end()) break;
      bin->first -= own[fits];
      --bin->second;
      shed += own[fits];
    }
    const int64_t tokens = std::min(st_.left[e], st_.spare[g] + shed);
    const int64_t overflow = tokens - st_.spare[g];
    if (overflow <= 0) continue;
    int sheds = 0;
    for (int64_t covered = 0; covered < overflow; covered += own[sheds++]) {
    }
    const double cost = PieceCost(h, e, g) + sheds * tree_costs_.intra;
    if (!best || std::make_tuple(-tokens, cost, g) < std::make_tuple(-best->tokens, best->cost, best->receiver)) {
      best = Handoff{e, g, tokens, overflow, cost};
    }
  }
  return best;
}

void Placement::ApplyCarry(int h, const Handoff& carry) {
  Export(h, carry.expert, carry.receiver, carry.tokens);
  const int g = carry.receiver;
  SetRoom(g, -st_.spare[g], 0);
  AddDebt(carry.cost - PieceCost(h, carry.expert, g));
}

void Placement::ApplyHandoff(int h, const Handoff& handoff) {
  AddPiece(h, handoff.expert, handoff.receiver, handoff.tokens);
  const int g = handoff.receiver;
  SetRoom(g, -st_.spare[g], 0);
  AddDebt(handoff.cost - PieceCost(h, handoff.expert, g));
}

void Placement::BestCover(int h) {
  GrowPieces(h, Scope::kAnywhere);
  if (st_.surplus[h] == 0) return;
  const std::optional<Option> two = CoverInTwo(h);
  auto apply_two = [&] {
    AddPiece(h, two->first.expert, two->first.rank, two->first.tokens);
    if (two->pieces == 2) AddPiece(h, two->second.expert, two->second.rank, two->second.tokens);
  };
  // CoverInTwo is exact over covers of one or two pieces (over the bins that matter), and a
  // split of three or more pieces costs at least three intra-node pieces, so the split cannot
  // win once CoverInTwo costs no more than that (ties went to the split before; measured over
  // the frontier cases, taking CoverInTwo loses nothing and saves the split's trials).
  const Topology& topo = request_->topology();
  if (two && topo.tree_costs() && two->cost - st_.cost <= 3 * topo.tree_costs()->intra) {
    apply_two();
    return;
  }
  std::tuple<int64_t, double> split_key;
  const int inside = PlanSplit(h, two ? two->cost : std::numeric_limits<double>::infinity(), split_key);
  // A handoff costs an inter-node piece and at least one shed.
  const bool handoff_can_win = !two || !topo.tree_costs() ||
                               two->cost - st_.cost > topo.tree_costs()->inter + topo.tree_costs()->intra;
  const std::optional<Handoff> handoff = handoff_can_win ? PlanHandoff(h) : std::nullopt;
  const auto two_key = two ? std::make_tuple(int64_t{0}, two->cost) : std::make_tuple(st_.surplus[h] + 1, 0.0);
  const auto handoff_key =
      handoff ? std::make_tuple(int64_t{0}, st_.cost + handoff->cost) : std::make_tuple(st_.surplus[h] + 1, 0.0);
  if (handoff && handoff_key < two_key && handoff_key < split_key) {
    ApplyHandoff(h, *handoff);
  } else if (two && two_key < split_key) {
    apply_two();
  } else {
    ApplySplit(h, inside);
  }
}

void Placement::Export(int h, int e, int c, int64_t amount) {
  AddPiece(h, e, c, amount);
  // h sent more than its surplus: the rest of the expert's piece is room for its node-mates.
  if (st_.surplus[h] < 0) SetRoom(h, 0, st_.spare[h] - st_.surplus[h]);
}

void Placement::CoverHot() {
  for (int h : hot_) PlaceWhole(h);
  for (int h : hot_) {
    if (st_.surplus[h] > 0) BestCover(h);
  }
}

void Placement::CoverNode(int node) {
  deferred_node_ = node;
  st_.debt = 0;
  log_.clear();
  hot_.clear();
  for (int r : request_->topology().ranks_of_node(node)) {
    if (st_.surplus[r] > 0) hot_.push_back(r);
  }
  std::stable_sort(hot_.begin(), hot_.end(), [&](int a, int b) { return st_.surplus[a] > st_.surplus[b]; });
  int carriers_max = exports_[node] > 0 ? std::min<int>(kMaxCarriers, static_cast<int>(hot_.size())) : 0;
  if (carriers_max == 0) {
    CoverHot();
  } else {
    // A node that must export: also try letting its hot ranks with the biggest experts carry
    // whole experts across nodes (one inter-node piece each, bigger than their own surplus),
    // so that node-mates cover themselves inside the node in the room that leaves.
    std::vector<int>& by_expert = carriers_;
    by_expert = hot_;
    std::stable_sort(by_expert.begin(), by_expert.end(), [&](int a, int b) {
      return st_.left[LargestExpert(a)] > st_.left[LargestExpert(b)];
    });
    const size_t start = log_.size();
    const bool can_hand_off = CanHandOff(by_expert[0]);
    // A carrier either fills the best-fitting bin in another node, or (`handing`) hands its
    // expert to a receiver that sheds its own experts to its node-mates: one inter-node piece
    // then carries what several would.
    auto try_carriers = [&](int carriers, bool handing) {
      // A reused choice may name more carriers than this order leaves hot ranks.
      carriers = std::min(carriers, static_cast<int>(by_expert.size()));
      for (int i = 0; i < carriers; ++i) {
        const int h = by_expert[i];
        const int e = LargestExpert(h);
        if (e < 0) continue;
        if (handing) {
          if (const std::optional<Handoff> carry = PlanCarry(h, e)) {
            ApplyCarry(h, *carry);
            continue;
          }
        }
        const int c = BestFitBin(h, e, st_.left[e], Scope::kOtherNodes);
        if (c >= 0) Export(h, e, c, std::min(st_.left[e], st_.spare[c]));
      }
      CoverHot();
      int64_t unmet = 0;
      for (int r : request_->topology().ranks_of_node(node)) unmet += st_.surplus[r];
      return std::make_tuple(unmet, st_.cost + st_.debt);
    };
    if (carriers_chosen_[node] >= 0) {
      // The first node order chose already; the second reuses the choice (measured: no loss).
      try_carriers(carriers_chosen_[node], carriers_handing_[node]);
      carriers_max = 0;
    }
    logging_ = carriers_max > 0;
    std::tuple<int64_t, double> best_key =
        carriers_max > 0 ? try_carriers(0, false) : std::make_tuple(int64_t{0}, 0.0);
    carriers_chosen_[node] = 0;
    carriers_handing_[node] = false;
    // Carriers only pay by merging cross-node pieces: with fewer than two there is nothing to merge.
    int cross = 0;
    for (size_t i = start; i < log_.size(); ++i) {
      cross += log_[i].kind == Undo::kAdd && !request_->topology().same_node(log_[i].rank, log_[i].bin);
    }
    for (int carriers = 1; carriers <= (cross >= 2 ? carriers_max : 0); ++carriers) {
      best_changes_.clear();
      Rollback(start, &best_changes_);
      const std::tuple<int64_t, double> key = try_carriers(carriers, false);
      // One more carrier rarely helps once one did not: go back to the better cover.
      if (!(key < best_key)) {
        Rollback(start, nullptr);
        Redo(best_changes_);
        break;
      }
      best_key = key;
      carriers_chosen_[node] = carriers;
    }
    // Then the same carriers handing off, in one trial: as many as the plain trials chose, or all
    // the node's hot ranks if none.
    if (cross >= 2 && can_hand_off) {
      const int carriers = carriers_chosen_[node] > 0 ? carriers_chosen_[node] : carriers_max;
      best_changes_.clear();
      Rollback(start, &best_changes_);
      const std::tuple<int64_t, double> key = try_carriers(carriers, true);
      if (key < best_key) {
        carriers_chosen_[node] = carriers;
        carriers_handing_[node] = true;
      } else {
        Rollback(start, nullptr);
        Redo(best_changes_);
      }
    }
  }
  logging_ = false;
  deferred_node_ = -1;
  if (tree_) {
    for (int c : request_->topology().ranks_of_node(node)) Reconcile(c);
  }
}

// ---------------------------------------------------------------------------------------------
// The whole placement.

void Placement::Reset(int64_t cap) {
  const int R = request_->ranks();
  st_.surplus.assign(static_cast<size_t>(R), 0);
  st_.spare.assign(static_cast<size_t>(R), 0);
  for (int r = 0; r < R; ++r) {
    const int64_t l = sums_->rank_loads[r];
    if (l > cap) st_.surplus[r] = l - cap;
    if (l < cap) st_.spare[r] = cap - l;
  }
  st_.left = sums_->expert_totals;
  st_.slots.assign(static_cast<size_t>(R), request_->slots_per_rank());
  st_.cost = 0;
  st_.pieces.clear();
  st_.first.assign(static_cast<size_t>(R), -1);
  st_.last.assign(static_cast<size_t>(R), -1);
  st_.next.clear();
  st_.open_other.clear();
  st_.indexed.assign(static_cast<size_t>(R), -1);
  deferred_node_ = -1;
  for (int r = 0; r < R; ++r) {
    if (tree_ && IsOpen(r)) {
      st_.open_other.push_back({st_.spare[r], r});
      st_.indexed[r] = st_.spare[r];
    }
  }
  std::sort(st_.open_other.begin(), st_.open_other.end());
}

void Placement::UseResident() {
  for (const Replica& r : resident_) {
    const int h = request_->home_of(r.expert);
    const int64_t amount = std::min({st_.surplus[h], st_.spare[r.rank], st_.left[r.expert]});
    if (amount <= 0 || st_.slots[r.rank] == 0) continue;
    AddPiece(h, r.expert, r.rank, amount);
  }
}

std::vector<int> Placement::NodeOrder() {
  const Topology& topo = request_->topology();
  const int R = request_->ranks();
  exports_.assign(static_cast<size_t>(topo.nodes()), 0);
  carriers_chosen_.assign(static_cast<size_t>(topo.nodes()), -1);
  carriers_handing_.assign(static_cast<size_t>(topo.nodes()), 0);
  if (tree_) {
    supply_ = st_.surplus;
    demand_ = st_.spare;
    demand_ranks_.clear();
    for (int n = 0; n < topo.nodes(); ++n) {
      for (int r : topo.ranks_of_node(n)) {
        if (demand_[r] > 0) demand_ranks_.push_back(r);
      }
    }
    MatchOnTree(topo, supply_, demand_, demand_ranks_, [&](int from, int to, int64_t amount) {
      if (!topo.same_node(from, to)) exports_[topo.node_of(from)] += amount;
    });
  } else {
    std::vector<int> hot, cold;
    for (int r = 0; r < R; ++r) {
      if (st_.surplus[r] > 0) hot.push_back(r);
      if (st_.spare[r] > 0) cold.push_back(r);
    }
    std::vector<int64_t> supply, demand;
    std::vector<double> cost;
    for (int h : hot) supply.push_back(st_.surplus[h]);
    for (int c : cold) demand.push_back(st_.spare[c]);
    for (int h : hot) {
      for (int c : cold) cost.push_back(topo.cost(h, c));
    }
    for (const TransportFlow& f : SolveMinCostTransport(supply, demand, cost).flows) {
      if (!topo.same_node(hot[f.from], cold[f.to])) exports_[topo.node_of(hot[f.from])] += f.amount;
    }
  }
  std::vector<int> order(static_cast<size_t>(topo.nodes()));
  std::iota(order.begin(), order.end(), 0);
  // Self-sufficient nodes first (they only use their own room), then exporters, largest first.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return std::make_tuple(exports_[a] > 0, -exports_[a]) < std::make_tuple(exports_[b] > 0, -exports_[b]);
  });
  return order;
}

void Placement::Walk(const std::vector<int>& hot, const std::vector<int>& bins) {
  size_t i = 0, j = 0;
  while (i < hot.size() && j < bins.size()) {
    const int h = hot[i], c = bins[j];
    if (st_.surplus[h] == 0) {
      ++i;
      continue;
    }
    if (c == h || !IsOpen(c)) {
      ++j;
      continue;
    }
    // The biggest expert that c does not hold yet.
    const int per_rank = request_->experts_per_rank();
    int e = -1;
    for (int x = h * per_rank; x < (h + 1) * per_rank; ++x) {
      if (st_.left[x] > 0 && !Holds(x, c) && (e < 0 || st_.left[x] > st_.left[e])) e = x;
    }
    if (e < 0) {
      ++i;  // h has nothing c can take: leave it to the clean-up
      continue;
    }
    AddPiece(h, e, c, std::min({st_.surplus[h], st_.spare[c], st_.left[e]}));
  }
}

void Placement::SequenceCover(const std::vector<int>& nodes, SequenceOrder order) {
  const Topology& topo = request_->topology();
  std::vector<int>& hot = hot_;
  std::vector<int>& bins = carriers_;
  auto largest_left = [&](int h) {
    const int e = LargestExpert(h);
    return e < 0 ? int64_t{0} : st_.left[e];
  };
  for (int n : nodes) {
    hot.clear();
    bins.clear();
    for (int r : topo.ranks_of_node(n)) {
      if (st_.surplus[r] > 0) hot.push_back(r);
      if (IsOpen(r)) bins.push_back(r);
    }
    // Which hot rank comes last decides who carries what the node cannot keep across nodes;
    // which bin comes last keeps room for what other nodes send. No order wins everywhere.
    switch (order.hot) {
      case SequenceOrder::kBiggestExpertLast:
        std::stable_sort(hot.begin(), hot.end(), [&](int a, int b) { return largest_left(a) < largest_left(b); });
        break;
      case SequenceOrder::kBiggestSurplusLast:
        std::stable_sort(hot.begin(), hot.end(), [&](int a, int b) { return st_.surplus[a] < st_.surplus[b]; });
        break;
      case SequenceOrder::kRankOrder:
        break;
    }
    if (order.roomiest_bin_last) {
      std::stable_sort(bins.begin(), bins.end(), [&](int a, int b) { return st_.spare[a] < st_.spare[b]; });
    }
    Walk(hot, bins);
  }
  hot.clear();
  bins.clear();
  for (int r = 0; r < request_->ranks(); ++r) {
    if (st_.surplus[r] > 0) hot.push_back(r);
    if (IsOpen(r)) bins.push_back(r);
  }
  // What the nodes could not keep: the smallest remainders first, into the roomiest bins; or in
  // rank order.
  if (order.smallest_remainder_first) {
    std::stable_sort(hot.begin(), hot.end(), [&](int a, int b) { return st_.surplus[a] < st_.surplus[b]; });
    std::stable_sort(bins.begin(), bins.end(), [&](int a, int b) { return st_.spare[a] > st_.spare[b]; });
  }
  Walk(hot, bins);
}

void Placement::AbsorbCrumbs() {
  const int K = request_->slots_per_rank();
  for (int c = 0; c < request_->ranks(); ++c) {
    if (st_.spare[c] == 0 || st_.slots[c] > 0) continue;
    for (int i = 0; i < K && st_.spare[c] > 0; ++i) {
      const int e = st_.held[static_cast<size_t>(c) * K + i];
      const int h = request_->home_of(e);
      const int64_t add = std::min(st_.spare[c], st_.left[e]);
      if (add == 0) continue;
      int piece = st_.first[h];
      while (st_.pieces[piece].expert != e || st_.pieces[piece].rank != c) piece = st_.next[piece];
      GrowPiece(h, piece, add);
      if (st_.surplus[h] < 0) SetRoom(h, 0, st_.spare[h] - st_.surplus[h]);
    }
  }
}

bool Placement::Place(int64_t cap, std::vector<Piece>& pieces) {
  Reset(cap);
  UseResident();
  const std::vector<int> order = NodeOrder();
  const bool any_exporter = std::any_of(exports_.begin(), exports_.end(), [](int64_t x) { return x > 0; });
  bool have_best = false;
  std::tuple<int64_t, double> best_key;
  base_ = st_;
  // With (almost) no slack every bin must be filled to the brim, where best fit fragments them
  // and the northwest-corner rule does not: try it too, in a few orders.
  int64_t room = 0, surplus = 0;
  for (int r = 0; r < request_->ranks(); ++r) {
    room += st_.spare[r];
    surplus += st_.surplus[r];
  }
  const bool tight = (room - surplus) * 100 <= sums_->total;
  constexpr SequenceOrder kSequences[] = {
      {SequenceOrder::kBiggestSurplusLast, true, true}, {SequenceOrder::kBiggestExpertLast, true, true},
      {SequenceOrder::kRankOrder, true, true},          {SequenceOrder::kBiggestExpertLast, false, true},
      {SequenceOrder::kBiggestSurplusLast, true, false}, {SequenceOrder::kBiggestExpertLast, true, false},
      {SequenceOrder::kRankOrder, true, false},          {SequenceOrder::kBiggestExpertLast, false, false}};
  const int passes = 2 + (tight ? static_cast<int>(std::size(kSequences)) : 0);
  for (int pass = 0; pass < passes; ++pass) {
    const bool exporters_first = pass == 1;
    const bool sequence = pass >= 2;
    if (pass > 0) {
      if (exporters_first && !any_exporter) continue;  // the same order again
      st_ = base_;
    }
    std::vector<int> nodes = order;
    if (exporters_first) {
      std::stable_partition(nodes.begin(), nodes.end(), [&](int n) { return exports_[n] > 0; });
    }
    if (sequence) {
      SequenceCover(nodes, kSequences[pass - 2]);
    } else {
      for (int node : nodes) CoverNode(node);
    }
    // Handoffs leave receivers over the cap in nodes that may already be done: their turn again.
    for (int node : nodes) {
      const std::vector<int>& ranks = request_->topology().ranks_of_node(node);
      if (std::any_of(ranks.begin(), ranks.end(), [&](int r) { return st_.surplus[r] > 0; })) CoverNode(node);
    }
    for (int h = 0; h < request_->ranks(); ++h) {
      if (st_.surplus[h] > 0) CoverRank(h, Scope::kAnywhere);
    }
    if (std::any_of(st_.surplus.begin(), st_.surplus.end(), [](int64_t x) { return x > 0; })) {
      AbsorbCrumbs();
      for (int h = 0; h < request_->ranks(); ++h) {
        if (st_.surplus[h] > 0) CoverRank(h, Scope::kAnywhere);
      }
    }
    const std::tuple<int64_t, double> key{std::accumulate(st_.surplus.begin(), st_.surplus.end(), int64_t{0}), st_.cost};
    if (!have_best || key < best_key) {
      best_key = key;
      pieces = st_.pieces;
      have_best = true;
    }
  }
  return std::get<0>(best_key) == 0;
}

}  // namespace taot::planners

#include "planners/placement_state.h"

#include <algorithm>
#include <tuple>

#include "planners/sorted_place.h"

namespace taot::planners {

void PlacementState::Bind(const PlanRequest& request, const LoadSums& sums) {
  topology_ = &request.topology();
  sums_ = &sums;
  per_rank_ = request.experts_per_rank();
  slots_per_rank_ = request.slots_per_rank();
  tree_ = request.topology().tree_costs().has_value();
  if (tree_) tree_costs_ = *request.topology().tree_costs();
  resident_ = request.resident;
  std::sort(resident_.begin(), resident_.end());
  resident_start_.clear();
  if (!resident_.empty()) {
    resident_start_.assign(static_cast<size_t>(request.experts()) + 1, 0);
    for (const Replica& r : resident_) ++resident_start_[r.expert + 1];
    for (int e = 0; e < request.experts(); ++e) resident_start_[e + 1] += resident_start_[e];
  }
  // The 8-byte arrays first, so that every array starts aligned.
  const auto R = static_cast<size_t>(request.ranks());
  Layout layout;
  auto place = [&](Slice& slice, size_t count, size_t size) {
    slice = {layout.bytes, count};
    layout.bytes += count * size;
  };
  place(layout.surplus, R, sizeof(int64_t));
  place(layout.spare, R, sizeof(int64_t));
  place(layout.indexed, R, sizeof(int64_t));
  place(layout.left, static_cast<size_t>(request.experts()), sizeof(int64_t));
  place(layout.node_stamp, static_cast<size_t>(request.topology().nodes()), sizeof(uint64_t));
  place(layout.slots, R, sizeof(int));
  place(layout.first, R, sizeof(int));
  place(layout.last, R, sizeof(int));
  place(layout.held, R * static_cast<size_t>(slots_per_rank_), sizeof(int));
  if (layout != layout_) {
    layout_ = layout;
    v_.arrays.Renew(layout_.bytes);
  }
  PointInto();
  std::fill(a_.held.begin(), a_.held.end(), 0);
  ReserveLists(v_);
}

void PlacementState::ReserveLists(Values& values) const {
  // Each piece takes a slot: a first plan grows these once, not by doubling.
  const size_t slots = static_cast<size_t>(ranks()) * slots_per_rank_;
  values.pieces.reserve(slots);
  values.next.reserve(slots);
  values.open_other.reserve(static_cast<size_t>(ranks()));
}

void PlacementState::ResetDeferred(int64_t cap) {
  const int R = ranks();
  cap_ = cap;
  for (int r = 0; r < R; ++r) {
    const int64_t l = sums_->rank_loads[r];
    a_.surplus[r] = l > cap ? l - cap : 0;
    a_.spare[r] = l < cap ? cap - l : 0;
  }
  std::copy(sums_->expert_totals.begin(), sums_->expert_totals.end(), a_.left.begin());
  std::fill(a_.slots.begin(), a_.slots.end(), slots_per_rank_);
  v_.cost = 0;
  v_.pieces.clear();
  std::fill(a_.first.begin(), a_.first.end(), -1);
  std::fill(a_.last.begin(), a_.last.end(), -1);
  v_.next.clear();
  deferred_node_ = kAllNodes;
  indexing_ = false;
  std::fill(a_.node_stamp.begin(), a_.node_stamp.end(), ++last_stamp_);
}

// ---------------------------------------------------------------------------------------------
// Queries.

int PlacementState::ResidentAcross(int h) const {
  // resident_ is sorted by (expert, rank), and h's experts are one run of expert ids.
  const auto first = std::lower_bound(resident_.begin(), resident_.end(), Replica{h * per_rank_, -1});
  const auto last = std::lower_bound(first, resident_.end(), Replica{(h + 1) * per_rank_, -1});
  return static_cast<int>(
      std::count_if(first, last, [&](const Replica& r) { return !topology_->same_node(h, r.rank); }));
}

int64_t PlacementState::RoomiestElsewhere(int node) const {
  // By room, the roomiest last.
  for (auto it = v_.open_other.rbegin(); it != v_.open_other.rend(); ++it) {
    if (topology_->node_of(it->rank) != node) return it->room;
  }
  return -1;
}

int64_t PlacementState::NodeExcess(int node) const {
  int64_t excess = 0;
  for (int r : topology_->ranks_of_node(node)) {
    excess += a_.surplus[r];
    if (IsOpen(r)) excess -= a_.spare[r];
  }
  return excess;
}

int PlacementState::BestFitOtherNodes(int h, int e, int64_t want) const {
  // Every bin of another node costs the same (the inter-node cost) on a two-level topology, so
  // best fit is the first eligible bin at or above `want` in (room, rank) order; failing that,
  // the roomiest eligible bin, the lowest rank among equals.
  auto eligible = [&](const Bin& b) { return !topology_->same_node(h, b.rank) && !Holds(e, b.rank); };
  auto it = std::lower_bound(v_.open_other.begin(), v_.open_other.end(), Bin{want, -1});
  for (; it != v_.open_other.end(); ++it) {
    if (eligible(*it)) return it->rank;
  }
  int best = -1;
  int64_t best_room = -1;
  for (auto rit = v_.open_other.rbegin(); rit != v_.open_other.rend(); ++rit) {
    if (best >= 0 && rit->room < best_room) break;
    if (eligible(*rit)) {
      best = rit->rank;
      best_room = rit->room;
    }
  }
  return best;
}

int PlacementState::BestFitBin(int h, int e, int64_t want, Scope scope) const {
  if (scope == Scope::kOtherNodes && tree_) return BestFitOtherNodes(h, e, want);
  if (scope == Scope::kSameNode && tree_) {
    // One cost for the whole node: the tightest bin that fits, else the roomiest.
    int best = -1;
    for (int c : topology_->ranks_of_node(topology_->node_of(h))) {
      if (c == h || !IsOpen(c)) continue;
      const int64_t room = a_.spare[c];
      // Whether c would beat the best so far, before the dearer question whether it can host e.
      const int64_t best_room = best < 0 ? 0 : a_.spare[best];
      const bool better =
          best < 0 || (room >= want ? (best_room < want || room < best_room) : (best_room < want && room > best_room));
      if (better && !Holds(e, c)) best = c;
    }
    return best;
  }
  // Ties to the lower rank: candidates come in rank order and only a smaller key replaces.
  auto key = [&](int c) {
    const bool fits = a_.spare[c] >= want;
    const double cost = PieceCost(h, e, c);
    return std::make_tuple(!fits, fits ? cost : 0.0, fits ? a_.spare[c] : -a_.spare[c], cost);
  };
  const std::span<const int> candidates =
      scope == Scope::kSameNode ? topology_->ranks_of_node(topology_->node_of(h)) : topology_->all_ranks();
  int best = -1;
  for (int c : candidates) {
    if (!CanHost(h, e, c, scope)) continue;
    if (best < 0 || key(c) < key(best)) best = c;
  }
  return best;
}

// ---------------------------------------------------------------------------------------------
// Changes.

void PlacementState::MoveInIndex(int c, int64_t want) {
  const int64_t have = a_.indexed[c];
  a_.indexed[c] = want;
  std::vector<Bin>& bins = v_.open_other;
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
  MoveToSortedPlace(bins, at, now);
}

void PlacementState::Shift(int h, int e, int c, int64_t amount, int slots) {
  a_.surplus[h] -= amount;
  a_.left[e] -= amount;
  a_.spare[c] -= amount;
  a_.slots[c] -= slots;
  ReindexUnlessDeferred(c);
}

void PlacementState::AddPiece(int h, int e, int c, int64_t amount) {
  Change u{Change::kAdd, h};
  u.expert = e;
  u.bin = c;
  u.amount = amount;
  u.old_last = a_.last[h];
  Stamp(h, c, u);
  Log(u);
  const int K = slots_per_rank_;
  const int index = static_cast<int>(v_.pieces.size());
  v_.cost += PieceCost(h, e, c);
  a_.held[static_cast<size_t>(c) * K + K - a_.slots[c]] = e;
  v_.pieces.push_back({e, c, amount});
  v_.next.push_back(-1);
  (a_.last[h] < 0 ? a_.first[h] : v_.next[a_.last[h]]) = index;
  a_.last[h] = index;
  Shift(h, e, c, amount, 1);
}

void PlacementState::GrowPiece(int h, int piece, int64_t amount) {
  Change u{Change::kGrow, h};
  u.piece = piece;
  u.amount = amount;
  u.bin = v_.pieces[piece].rank;
  Stamp(h, u.bin, u);
  Log(u);
  Piece& p = v_.pieces[piece];
  p.tokens += amount;
  Shift(h, p.expert, p.rank, amount, 0);
}

void PlacementState::SetRoom(int r, int64_t surplus, int64_t spare) {
  Change u{Change::kRoom, r};
  u.surplus = surplus;
  u.spare = spare;
  u.old_surplus = a_.surplus[r];
  u.old_spare = a_.spare[r];
  u.bin = r;
  Stamp(r, r, u);
  Log(u);
  a_.surplus[r] = surplus;
  a_.spare[r] = spare;
  ReindexUnlessDeferred(r);
}

void PlacementState::AddDebt(double debt) {
  Change u{Change::kDebt, 0};
  u.debt = debt;
  Log(u);
  v_.debt += debt;
}

void PlacementState::EndDeferral() {
  const int node = deferred_node_;
  deferred_node_ = -1;
  if (node == kAllNodes) {
    IndexAllBins();
  } else if (tree_ && node >= 0) {
    for (int c : topology_->ranks_of_node(node)) Reindex(c);
  }
}

void PlacementState::IndexAllBins() {
  v_.open_other.clear();
  std::fill(a_.indexed.begin(), a_.indexed.end(), -1);
  indexing_ = tree_;
  if (!tree_) return;
  for (int r = 0; r < ranks(); ++r) {
    if (IsOpen(r)) {
      v_.open_other.push_back({a_.spare[r], r});
      a_.indexed[r] = a_.spare[r];
    }
  }
  std::sort(v_.open_other.begin(), v_.open_other.end());
}

// ---------------------------------------------------------------------------------------------
// The log.

void PlacementState::Rollback(size_t mark, std::vector<Change>* redo) {
  const size_t first_undone = redo != nullptr ? redo->size() : 0;
  while (log_.size() > mark) {
    const Change u = log_.back();
    log_.pop_back();
    switch (u.kind) {
      case Change::kAdd:
        v_.pieces.pop_back();
        v_.next.pop_back();
        (u.old_last < 0 ? a_.first[u.rank] : v_.next[u.old_last]) = -1;
        a_.last[u.rank] = u.old_last;
        Shift(u.rank, u.expert, u.bin, -u.amount, -1);
        break;
      case Change::kGrow: {
        Piece& p = v_.pieces[u.piece];
        p.tokens -= u.amount;
        Shift(u.rank, p.expert, p.rank, -u.amount, 0);
        break;
      }
      case Change::kRoom:
        a_.surplus[u.rank] = u.old_surplus;
        a_.spare[u.rank] = u.old_spare;
        ReindexUnlessDeferred(u.rank);
        break;
      case Change::kDebt:
        break;
    }
    if (u.kind != Change::kDebt) {
      a_.node_stamp[static_cast<size_t>(topology_->node_of(u.bin))] = u.old_stamps[1];
      a_.node_stamp[static_cast<size_t>(topology_->node_of(u.rank))] = u.old_stamps[0];
    }
    v_.cost = u.old_cost;
    v_.debt = u.old_debt;
    if (redo != nullptr) redo->push_back(u);
  }
  if (redo != nullptr) std::reverse(redo->begin() + static_cast<std::ptrdiff_t>(first_undone), redo->end());
}

void PlacementState::Redo(const std::vector<Change>& changes) {
  for (const Change& u : changes) {
    switch (u.kind) {
      case Change::kAdd:
        AddPiece(u.rank, u.expert, u.bin, u.amount);
        break;
      case Change::kGrow:
        GrowPiece(u.rank, u.piece, u.amount);
        break;
      case Change::kRoom:
        SetRoom(u.rank, u.surplus, u.spare);
        break;
      case Change::kDebt:
        AddDebt(u.debt);
        break;
    }
  }
}

}  // namespace taot::planners

#include "planners/split_cover.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace taot::planners {

bool SplitCover::NextInside(int& e, int& c) const {
  const Sketch& sk = sketch_;
  e = sk.LargestExpert();
  if (e < 0) return false;
  const PlacementState& state = sk.state();
  c = -1;
  // Room first: a bin no roomier than the best so far needs no further look (CanHost reads its
  // slots and the pieces it holds).
  int64_t best = 0;
  for (int x : state.topology().ranks_of_node(state.topology().node_of(sk.h()))) {
    const int64_t room = sk.Room(x);
    if (room > best && sk.CanHost(e, x)) {
      c = x;
      best = room;
    }
  }
  return c >= 0;
}

void SplitCover::PrepareFloor(const PlacementState& state, int h) {
  piece_floor_ = state.CrossNodePieceCost();
  growth_ = 0;
  roomiest_sums_.clear();
  if (piece_floor_ <= 0) return;
  free_pieces_ = state.ResidentAcross(h);
  const Topology& topo = state.topology();
  for (int i = state.first_piece(h); i >= 0; i = state.next_piece(i)) {
    const int c = state.pieces()[i].rank;
    if (!topo.same_node(h, c)) growth_ += state.spare(c);
  }
  // Enough of the roomiest bins to hold h's whole surplus, or all there are.
  const std::vector<Bin>& bins = state.open_bins();
  int64_t sum = 0;
  for (auto it = bins.rbegin(); it != bins.rend() && sum < state.surplus(h); ++it) {
    if (topo.same_node(h, it->rank)) continue;
    sum += it->room;
    roomiest_sums_.push_back(sum);
  }
}

double SplitCover::CrossNodeFloor(int64_t rem) const {
  const int64_t need = rem - growth_;
  if (piece_floor_ <= 0 || need <= 0) return 0;
  const auto it = std::lower_bound(roomiest_sums_.begin(), roomiest_sums_.end(), need);
  if (it == roomiest_sums_.end()) return -1;
  const int64_t pieces = it - roomiest_sums_.begin() + 1;
  return static_cast<double>(std::max<int64_t>(0, pieces - free_pieces_)) * piece_floor_;
}

int64_t SplitCover::AcrossRoom(const PlacementState& state, int h) {
  const Topology& topo = state.topology();
  int64_t room = 0;
  for (int c = 0; c < state.ranks(); ++c) {
    if (!topo.same_node(h, c) && state.IsOpen(c)) room += state.spare(c);
  }
  // Bins where a piece of h's can grow without a slot (counted twice where open too: a bound).
  for (int i = state.first_piece(h); i >= 0; i = state.next_piece(i)) {
    const int c = state.pieces()[i].rank;
    if (!topo.same_node(h, c)) room += state.spare(c);
  }
  return room;
}

SplitCover::Split SplitCover::Plan(const PlacementState& state, int h, double bound, double useless) {
  Sketch& sk = sketch_;
  sk.Start(state, h);
  // The pieces inside, laid once: j = 0, then each next piece while h is not covered, the node
  // has room and the pieces inside cost no more than the bound.
  inside_.assign(1, sk.mark());
  for (int e = -1, c = -1; sk.rem() > 0 && NextInside(e, c);) {
    sk.Add(e, c, std::min({sk.rem(), sk.Left(e), sk.Room(c)}), true, state.PieceCost(h, e, c));
    if (state.cost() + sk.cost() > bound) break;
    inside_.push_back(sk.mark());
  }
  // The floor rules out splits below the first weighed, and any that would reach `useless`.
  const bool bounded = useless < std::numeric_limits<double>::infinity();
  if (inside_.size() > 1 || bounded) PrepareFloor(state, h);
  // Most pieces inside first. A j that covers h only wins by costing less than the best so far,
  // or as little (lower j win ties); the slack keeps a floor summed in another order than the
  // cover's own sum from ruling out an equal cost.
  const auto slack = [](double cost) { return 1e-9 * (1 + std::abs(cost)); };
  Split best;
  bool found = false, skipped = false;
  int64_t across = -1;  // AcrossRoom(state, h), once a best leaves some over
  for (int j = static_cast<int>(inside_.size()) - 1; j >= 0; --j) {
    sk.Rewind(inside_[static_cast<size_t>(j)]);
    // Fewer pieces inside leave more to place across than there is room for there: such a split
    // leaves more over than the best, which only a split leaving less over could beat.
    if (found && std::get<0>(best.key) > 0) {
      if (across < 0) across = AcrossRoom(state, h);
      if (sk.rem() - across > std::get<0>(best.key)) continue;
    }
    const bool prune = found && std::get<0>(best.key) == 0;
    if (bounded || prune) {
      const double floor = CrossNodeFloor(sk.rem());
      const double least = state.cost() + sk.cost() + floor;
      if (bounded && floor >= 0 && least >= useless + slack(useless)) {
        skipped = true;
        continue;
      }
      const double best_cost = std::get<1>(best.key);
      if (prune && (floor < 0 || least > best_cost + slack(best_cost))) continue;
    }
    if (sk.rem() > 0) sk.CoverOtherNodes();
    const Key key{sk.rem(), state.cost() + sk.cost()};
    if (!found || key <= best.key) {
      best = {j, key};
      best_touches_.assign(sk.touches().begin(), sk.touches().end());
    }
    found = true;
  }
  // A split skipped as useless might have left less over than the best weighed: only a best that
  // covers h is sure to beat it.
  if (!found || (skipped && std::get<0>(best.key) > 0)) best = {0, kUseless};
  return best;
}

void SplitCover::Apply(PlacementState& state, int h) const {
  // The sketch's touches are the pieces the split makes, in the order it makes them (the pieces
  // inside, then CoverRank(h, kOtherNodes)'s), with the amounts the state's own queries give.
  for (const Sketch::Touch& t : best_touches_) {
    if (t.new_piece) {
      state.AddPiece(h, t.expert, t.bin, t.amount);
      continue;
    }
    state.GrowPiece(h, state.PieceOf(h, t.expert, t.bin), t.amount);
  }
}

}  // namespace taot::planners

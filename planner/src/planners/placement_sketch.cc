#include "planners/placement_sketch.h"

#include <algorithm>
#include <tuple>
#include <utility>

namespace taot::planners {

void Sketch::Resize(int ranks, int experts) {
  touches_.clear();
  used_.assign(static_cast<size_t>(ranks), 0);
  new_pieces_.assign(static_cast<size_t>(ranks), 0);
  taken_.assign(static_cast<size_t>(experts), 0);
}

void Sketch::Start(const PlacementState& state, int h) {
  state_ = &state;
  Rewind({0, state.surplus(h), 0.0});
  h_ = h;
}

void Sketch::Add(int e, int c, int64_t amount, bool new_piece, double piece_cost) {
  touches_.push_back({e, c, amount, new_piece});
  used_[c] += amount;
  new_pieces_[c] += new_piece;
  taken_[e] += amount;
  rem_ -= amount;
  cost_ += piece_cost;
}

void Sketch::Rewind(const Mark& m) {
  while (touches_.size() > m.touches) {
    const Touch& t = touches_.back();
    used_[t.bin] -= t.amount;
    new_pieces_[t.bin] -= t.new_piece;
    taken_[t.expert] -= t.amount;
    touches_.pop_back();
  }
  rem_ = m.rem;
  cost_ = m.cost;
}

int Sketch::LargestExpert() const {
  const int per_rank = state_->experts_per_rank();
  int best = -1;
  int64_t best_left = 0;
  for (int e = h_ * per_rank; e < (h_ + 1) * per_rank; ++e) {
    const int64_t left = Left(e);
    if (left > best_left) {
      best = e;
      best_left = left;
    }
  }
  return best;
}

int Sketch::BestFitOtherNodes(int e, int64_t want) const {
  const Topology& topo = state_->topology();
  // A bin the sketch touched has less room than its place in the state's index says, so those
  // few are weighed apart from the untouched ones, which the sorted index answers as usual.
  auto untouched = [&](int c) { return used_[c] == 0 && new_pieces_[c] == 0; };
  auto eligible = [&](int c) { return !topo.same_node(h_, c) && CanHost(e, c); };
  // Touched bins that are closed cannot be eligible: open_touched_ holds the others.
  int fit = -1, roomy = -1;
  auto better_fit = [&](int c) { return fit < 0 || std::make_pair(Room(c), c) < std::make_pair(Room(fit), fit); };
  auto roomier = [&](int c) { return roomy < 0 || Room(c) > Room(roomy) || (Room(c) == Room(roomy) && c < roomy); };
  if (state_->tree()) {
    const std::vector<Bin>& bins = state_->open_bins();
    for (auto it = std::lower_bound(bins.begin(), bins.end(), Bin{want, -1}); it != bins.end(); ++it) {
      if (untouched(it->rank) && eligible(it->rank)) {
        fit = it->rank;
        break;
      }
    }
    for (int c : open_touched_) {
      if (eligible(c) && Room(c) >= want && better_fit(c)) fit = c;
    }
    if (fit >= 0) return fit;
    for (auto it = bins.rbegin() + static_cast<std::ptrdiff_t>(closed_back_); it != bins.rend(); ++it) {
      if (roomy >= 0 && it->room < Room(roomy)) break;
      if (untouched(it->rank) && eligible(it->rank) && roomier(it->rank)) roomy = it->rank;
    }
    for (int c : open_touched_) {
      if (eligible(c) && roomier(c)) roomy = c;
    }
    return roomy;
  }
  // A general matrix: BestFitBin's key over every bin, with the sketch's room.
  int best = -1;
  auto key = [&](int c) {
    const int64_t room = Room(c);
    const bool fits = room >= want;
    const double cost = state_->PieceCost(h_, e, c);
    return std::make_tuple(!fits, fits ? cost : 0.0, fits ? room : -room, cost);
  };
  for (int c : topo.all_ranks()) {
    if (eligible(c) && (best < 0 || key(c) < key(best))) best = c;
  }
  return best;
}

void Sketch::AddToCover(int e, int c, int64_t amount, bool new_piece, double piece_cost) {
  const bool untouched = used_[c] == 0 && new_pieces_[c] == 0;
  Add(e, c, amount, new_piece, piece_cost);
  if (untouched && OpenElsewhere(c)) open_touched_.push_back(c);
  if (!OpenElsewhere(c)) {
    const auto it = std::find(open_touched_.begin(), open_touched_.end(), c);
    if (it != open_touched_.end()) open_touched_.erase(it);
  }
  SkipClosedBack();
}

void Sketch::SkipClosedBack() {
  if (!state_->tree()) return;
  const std::vector<Bin>& bins = state_->open_bins();
  while (closed_back_ < bins.size() && !OpenElsewhere(bins[bins.size() - 1 - closed_back_].rank)) ++closed_back_;
}

void Sketch::CoverOtherNodes() {
  const Topology& topo = state_->topology();
  // The frontier of the touches made before this cover (their bins are weighed apart from the
  // index), then of each piece it adds.
  open_touched_.clear();
  for (const Touch& t : touches_) {
    if (OpenElsewhere(t.bin) && std::find(open_touched_.begin(), open_touched_.end(), t.bin) == open_touched_.end()) {
      open_touched_.push_back(t.bin);
    }
  }
  closed_back_ = 0;
  SkipClosedBack();
  for (int i = state_->first_piece(h_); i >= 0; i = state_->next_piece(i)) {
    if (rem_ == 0) break;
    const Piece& p = state_->pieces()[i];
    if (topo.same_node(h_, p.rank)) continue;
    const int64_t add = std::min({rem_, Left(p.expert), Room(p.rank)});
    if (add > 0) AddToCover(p.expert, p.rank, add, false, 0.0);
  }
  while (rem_ > 0) {
    const int e = LargestExpert();
    if (e < 0) return;
    const int64_t want = std::min(rem_, Left(e));
    const int c = BestFitOtherNodes(e, want);
    if (c < 0) return;
    AddToCover(e, c, std::min(want, Room(c)), true, state_->PieceCost(h_, e, c));
  }
}

}  // namespace taot::planners

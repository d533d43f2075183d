// The what-if layer of the expert level of `taot`: a cover of one hot rank tried on the side,
// without changing the placement state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "planners/placement_state.h"

namespace taot::planners {

// What a cover of hot rank h would change: the tokens it would take from bins and experts and
// the pieces it would add, over an unchanged PlacementState. Its queries answer as the state's
// would after the cover were made (Room, CanHost, LargestExpert, BestFitOtherNodes), so a cover
// can be weighed, cut back to an earlier mark and weighed again at the cost of the pieces it
// adds, not of making and undoing them (the state's sorted bin index stays untouched).
//
// Complexity: Add and Rewind are O(1) per touch. CoverOtherNodes' best-fit queries are the
// state's plus O(touched bins still open) (those are weighed apart from the index), and the
// roomiest-bin scan starts past the index's bins the cover has already closed: a burst's cover,
// which fills the roomiest bins one after another, is linear in its pieces, not quadratic.
// Ties break as the state's queries do.
class Sketch {
 public:
  struct Touch {
    int expert;
    int bin;
    int64_t amount;
    bool new_piece;
  };
  // A point to come back to: the touches before it, and what was left and spent there.
  struct Mark {
    size_t touches;
    int64_t rem;
    double cost;
  };

  // Sizes the per-rank and per-expert sums (buffers are kept between requests).
  void Resize(int ranks, int experts);
  // A new sketch of hot rank h's cover over `state`, with h's whole surplus to place.
  void Start(const PlacementState& state, int h);
  // `amount` tokens of h's expert e to bin c, through a new piece or one h has there already.
  void Add(int e, int c, int64_t amount, bool new_piece, double piece_cost);
  Mark mark() const { return {touches_.size(), rem_, cost_}; }
  // Forgets the touches after the mark and puts back what was left and spent there.
  void Rewind(const Mark& m);

  const PlacementState& state() const { return *state_; }
  int h() const { return h_; }
  // h's surplus not placed yet, and what the touches' new pieces cost.
  int64_t rem() const { return rem_; }
  double cost() const { return cost_; }
  const std::vector<Touch>& touches() const { return touches_; }

  int64_t Room(int c) const { return state_->spare(c) - used_[c]; }
  int64_t Left(int e) const { return state_->left(e) - taken_[e]; }
  bool CanHost(int e, int c) const {
    return c != h_ && Room(c) > 0 && state_->slots(c) - new_pieces_[c] > 0 && !state_->Holds(e, c) && !Placed(e, c);
  }
  // h's expert with the most tokens left (the lowest among equals), or -1.
  int LargestExpert() const;
  // CoverRank(h, kOtherNodes) on the sketch: h's pieces in other nodes grow first, then its
  // biggest expert goes to the best-fit bin, until h is covered or no bin is left.
  void CoverOtherNodes();

 private:
  // PlacementState::BestFitBin(h, e, want, kOtherNodes) after the touches, during
  // CoverOtherNodes (which keeps open_touched_ and closed_back_ in step with its touches).
  int BestFitOtherNodes(int e, int64_t want) const;
  // Whether bin c of another node can still take a piece of some expert in this cover: room and a
  // slot left. Both only shrink while a cover adds pieces, so a bin that cannot stays so.
  bool OpenElsewhere(int c) const {
    return !state_->topology().same_node(h_, c) && Room(c) > 0 && state_->slots(c) - new_pieces_[c] > 0;
  }
  // Add, keeping CoverOtherNodes' frontier in step.
  void AddToCover(int e, int c, int64_t amount, bool new_piece, double piece_cost);
  // Moves closed_back_ past the index's roomiest bins that are not OpenElsewhere.
  void SkipClosedBack();
  // Whether the sketch added a piece of e on c.
  bool Placed(int e, int c) const {
    if (new_pieces_[c] == 0) return false;
    for (const Touch& t : touches_) {
      if (t.new_piece && t.expert == e && t.bin == c) return true;
    }
    return false;
  }

  const PlacementState* state_ = nullptr;
  int h_ = 0;
  int64_t rem_ = 0;
  double cost_ = 0;
  std::vector<Touch> touches_;
  // Sums of the touches, kept in step by Add and Rewind (zero where untouched).
  std::vector<int64_t> used_;    // per rank: tokens added to it
  std::vector<int> new_pieces_;  // per rank: pieces added to it
  std::vector<int64_t> taken_;   // per expert: tokens taken from it
  // CoverOtherNodes' frontier: the touched bins of other nodes still open (each once), and how
  // many of the index's roomiest bins (open_bins, from its end) are closed to this cover.
  std::vector<int> open_touched_;
  size_t closed_back_ = 0;
};

}  // namespace taot::planners

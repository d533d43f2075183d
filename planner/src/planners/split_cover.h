// The split cover of one hot rank, for the expert level of `taot`: some pieces inside the
// node, the rest from other nodes.
#pragma once

#include <cstdint>
#include <limits>
#include <tuple>
#include <vector>

#include "planners/placement_sketch.h"
#include "planners/placement_state.h"

namespace taot::planners {

// The problem: how many of hot rank h's pieces to place inside its node before the rest goes
// to other nodes. The method: for j = 0, 1, ..., j pieces inside (each h's biggest expert into
// the roomiest bin of the node), then CoverRank(h, kOtherNodes) for the rest, each j weighed
// on a sketch; the best j leaves the least surplus, then costs least (the lowest j among
// equals). The j weighed are those whose pieces inside cost no more than `bound` (a bound the
// caller has from another option), up to the j whose pieces inside cover h or fill the node.
//
// Speed: the pieces inside do not depend on the cover that follows, so they are laid once and
// the splits are weighed from the most pieces inside down (a burst's best split usually fills
// the node: its pieces inside are cheaper than the ones across that they replace). Once a split
// covers h, a j is only weighed when its pieces inside plus a floor under its cover across
// (CrossNodeFloor) could cost less, or as little (lower j win ties): most are not. Where no
// split covers h (a burst too big for the room left), a j is skipped whose pieces inside leave
// more over than the best's plus all the room across (AcrossRoom): it would leave more over.
// Complexity: O(j_max) covers at worst, each O(pieces x (E/R + bins looked at)).
class SplitCover {
 public:
  // (surplus left, cost): smaller is better.
  using Key = std::tuple<int64_t, double>;
  struct Split {
    int inside = 0;  // pieces inside h's node
    Key key;
  };

  void Resize(int ranks, int experts) { sketch_.Resize(ranks, experts); }
  // What Plan answers when every split might cost `useless` or more.
  static constexpr Key kUseless{std::numeric_limits<int64_t>::max(), std::numeric_limits<double>::infinity()};

  // The best split of h, giving up on splits dearer than `bound`. Where the best costs less than
  // `useless`, it is the answer; otherwise the answer is the best or kUseless (splits whose floor
  // reaches `useless` are not weighed).
  Split Plan(const PlacementState& state, int h, double bound,
             double useless = std::numeric_limits<double>::infinity());
  // Makes the split the last Plan(state, h, ...) chose, on the state as that Plan saw it: the
  // pieces its sketch weighed, without weighing them again.
  void Apply(PlacementState& state, int h) const;
  // The most that h's cover across nodes (CoverRank(h, kOtherNodes)) can place, whatever pieces
  // inside came first: the room of other nodes' bins with a slot and of those where h has a
  // piece to grow. Plan skips a split whose pieces inside leave more than that over the best's.
  static int64_t AcrossRoom(const PlacementState& state, int h);

 private:
  // The split's next piece inside h's node: the biggest expert into the roomiest bin (the
  // lowest rank among equals).
  bool NextInside(int& e, int& c) const;
  // Readies CrossNodeFloor for hot rank h (two-level topologies; elsewhere it answers 0
  // throughout).
  void PrepareFloor(const PlacementState& state, int h);
  // A floor under what covering `rem` tokens of h from other nodes adds to the cost, or -1 when
  // no cover can place them all. Pieces inside leave other nodes' bins as they are, so one table
  // serves every j: n new pieces fill at most n bins, so a cover takes at least as many as the
  // roomiest open bins of other nodes need to hold what h's pieces there cannot grow into, and
  // each costs at least the inter-node cost but for as many as h has replicas resident there.
  double CrossNodeFloor(int64_t rem) const;

  Sketch sketch_;
  std::vector<Sketch::Mark> inside_;         // the sketch after j pieces inside, j = 0, 1, ...
  double piece_floor_ = 0;                   // PlacementState::CrossNodePieceCost
  int free_pieces_ = 0;                      // PlacementState::ResidentAcross: pieces across that may be free
  int64_t growth_ = 0;                       // room of the bins of other nodes where h has pieces
  std::vector<int64_t> roomiest_sums_;       // room of the i + 1 roomiest open bins of other nodes
  std::vector<Sketch::Touch> best_touches_;  // the best split's pieces, for Apply
};

}  // namespace taot::planners

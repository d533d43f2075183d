// The split cover of one hot rank, for the expert level of `taot`: some pieces inside the
// node, the rest from other nodes.
#pragma once

#include <cstdint>
#include <tuple>

#include "planners/placement_sketch.h"
#include "planners/placement_state.h"

namespace taot::planners {

// The problem: how many of hot rank h's pieces to place inside its node before the rest goes
// to other nodes. The method: for j = 0, 1, ..., j pieces inside (each h's biggest expert into
// the roomiest bin of the node), then CoverRank(h, kOtherNodes) for the rest, each j weighed
// on a sketch; the best j leaves the least surplus, then costs least (the lowest j among
// equals). Every further j only adds pieces, so the search stops once the pieces inside cost
// what the best split, or a bound the caller has from another option, already does.
// Complexity: O(j_max) sketched covers, each O(pieces x (E/R + bins looked at)).
class SplitCover {
 public:
  // (surplus left, cost): smaller is better.
  using Key = std::tuple<int64_t, double>;
  struct Split {
    int inside = 0;  // pieces inside h's node
    Key key;
  };

  void Resize(int ranks, int experts) { sketch_.Resize(ranks, experts); }
  // The best split of h, giving up on splits dearer than `bound`.
  Split Plan(const PlacementState& state, int h, double bound);
  // Makes the split with `inside` pieces inside h's node.
  void Apply(PlacementState& state, int h, int inside);

 private:
  // The split's next piece inside h's node: the biggest expert into the roomiest bin (the
  // lowest rank among equals).
  bool NextInside(int& e, int& c) const;

  Sketch sketch_;
};

}  // namespace taot::planners

// The northwest-corner cover of the expert level of `taot`: for (almost) no slack, where every
// bin must be filled to the brim, best fit fragments the bins and this rule does not.
#pragma once

#include <vector>

#include "planners/placement_state.h"

namespace taot::planners {

// The problem: every hot rank's surplus into the room there is, when the room barely exceeds
// the surplus. The method, the northwest-corner rule of transport problems: node by node, the
// node's hot ranks and bins in a given order, each piece finishing a hot rank, filling a bin
// or using up an expert (the hot rank's biggest the bin does not hold yet); then the same
// across nodes with what is left. Which hot rank comes last decides who carries what the node
// cannot keep across nodes; which bin comes last keeps room for what other nodes send; no
// order wins everywhere, so the caller tries a few.
// Complexity: O(R log R + pieces x E/R x K). Ties (stable sorts) keep rank order.
class SequenceCover {
 public:
  struct Order {
    enum Hot { kBiggestSurplusLast, kBiggestExpertLast, kRankOrder } hot;  // inside a node
    bool roomiest_bin_last;                                                // inside a node; else rank order
    bool smallest_remainder_first;  // across nodes, into the roomiest bins; else rank order
  };

  // Covers `nodes` in that order, then what they could not keep.
  void Cover(PlacementState& state, const std::vector<int>& nodes, Order order);

 private:
  // Pieces from hot[i] into bins[j] in order.
  static void Walk(PlacementState& state, const std::vector<int>& hot, const std::vector<int>& bins);

  std::vector<int> hot_, bins_;  // the hot ranks and open bins in the order of the walk
};

}  // namespace taot::planners

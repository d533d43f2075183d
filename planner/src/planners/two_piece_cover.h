// The exact cover of one hot rank by at most two pieces, for the expert level of `taot`.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "planners/placement_state.h"

namespace taot::planners {

// The problem: hot rank h's whole surplus in one piece, or in two, at the least transfer cost.
// The method: a cover's shape is the class of its bins (h's node, or other nodes); a single
// piece takes the tightest bin of its class that fits all; of two pieces, the first fills the
// roomiest bin of its class and the second fits tightest in its own. Every expert of h is
// tried as the first piece (one try per first-piece size: the rest it leaves is the same);
// the first second expert that finds a bin stands for all (they find the same bin unless they
// hold it already). On a two-level topology every bin of a class costs the same, so shapes are
// tried cheapest first, stopping once one covers (and those that tie with it). A piece takes at
// most its bin's room, so a surplus over twice the roomiest bin's (a burst's) has no such cover:
// Find says so at once, from the roomiest bin of each class.
// Complexity: O(shapes x (E/R)^2 x log bins) plus the bins skipped for holding an expert.
// Ties, smaller first: (cost, pieces, tightness), then the order of shapes and experts.
class TwoPieceCover {
 public:
  struct Option {
    double cost = 0;  // the state's cost with the option's pieces
    int pieces = 0;
    // Tie-break between options of equal cost and size, smaller first: the room of the bin a
    // single piece fits tightest; for two pieces, minus the room of the second bin (two roomy
    // bins beat a roomy and a tight one: measured over the frontier cases).
    int64_t tightness = 0;
    Piece first, second;
  };

  // Orders the shapes for `state`'s topology (after PlacementState::Bind).
  void Prepare(const PlacementState& state);
  std::optional<Option> Find(const PlacementState& state, int h);
  static void Apply(PlacementState& state, int h, const Option& option);

 private:
  // A cover of at most two pieces by the class of its bins (0: h's node, 1: other nodes).
  struct Shape {
    int cls1, cls2;  // cls2 < 0: one piece
    double cost;     // on a two-level topology; 0 otherwise (every shape is tried)
    int pieces;
  };

  std::vector<Bin> same_node_bins_, other_node_bins_;  // open bins by (room, rank), per Find
  std::array<Shape, 6> shapes_;                        // in the order Find tries them
};

}  // namespace taot::planners

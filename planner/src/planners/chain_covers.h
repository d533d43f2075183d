// The chain covers of the expert level of `taot`: a rank that both receives and sends, so one
// inter-node piece and a few cheap intra-node ones replace several inter-node pieces. With
// tight slots they are what the exact optimum uses (docs/planners.md). Two-level topologies
// only: elsewhere they plan nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "planners/placement_state.h"

namespace taot::planners {

// One cross-node piece of h's expert to a receiver, which then sheds `overflow` tokens of its
// own experts to its node-mates (intra-node pieces, left to the receiver's node's cover; their
// estimated cost is booked as the state's debt).
struct Handoff {
  int expert;
  int receiver;
  int64_t tokens;
  int64_t overflow;  // what the receiver must shed
  double cost;       // the piece plus the receiver's sheds (estimated)
};

class ChainCovers {
 public:
  // How a chain's receiver sheds into its node-mates' rooms and slots, and so how far the
  // estimate trusts the receiver's node:
  // - kWhole: a carry's receiver sheds its biggest experts whole (first fit, decreasing), and a
  //   handoff counts all the node's room as free, even room an earlier receiver's overflow
  //   needs (optimistic: the node's cover often finds room the estimate does not see, and the
  //   plan that results decides);
  // - kPieces: a carry's receiver fills each mate, roomiest first, with pieces of its fullest
  //   experts (at a tight cap every room must be filled to the brim, and a burst's receiver's
  //   experts are bigger than any mate's room), and a handoff leaves the room the node owes.
  enum class Sheds { kWhole, kPieces };

  // A handoff of h's whole surplus (its biggest expert that holds it all) to a receiver g with
  // less room than that: per other node the roomiest open rank not holding the expert, if the
  // node's other room can take the overflow and g's biggest experts add up to it (one shed
  // each). The cheapest wins, then the smaller overflow, then the lower rank.
  // O(R + nodes x (E/R) log(E/R)).
  std::optional<Handoff> PlanHandoff(const PlacementState& state, int h, Sheds sheds);
  // A carrier's handoff: as much of h's expert e as one receiver in another node can take, its
  // room plus what it sheds, after the node's own surplus. The biggest such piece wins, then the
  // cheapest, then the lower rank. The piece may exceed h's surplus (Export).
  // O(R log R + nodes x (E/R) x ranks per node).
  std::optional<Handoff> PlanCarry(const PlacementState& state, int h, int e, Sheds sheds);
  // Whether h's biggest expert is more than three times as big as every bin outside h's node: only
  // then does a handoff carry what would otherwise take several inter-node pieces (measured on
  // the frontier cases: below that, the trial costs time and saves nothing). O(R).
  static bool CanHandOff(const PlacementState& state, int h);
  // Make the chain's piece, leave the receiver its overflow as surplus, book the sheds as debt.
  static void ApplyHandoff(PlacementState& state, int h, const Handoff& handoff);
  static void ApplyCarry(PlacementState& state, int h, const Handoff& carry);

 private:
  // The receiver's experts' tokens left, biggest first.
  const std::vector<int64_t>& ReceiverExperts(const PlacementState& state, int g);
  // g's sheds into mate_bins_ (consumed), in the order made.
  const std::vector<int64_t>& WholeSheds(const PlacementState& state, int g);
  const std::vector<int64_t>& PieceSheds(const PlacementState& state, int g);

  std::vector<int64_t> receiver_experts_;
  std::vector<std::pair<int64_t, int>> mate_bins_;  // (room, slots) of the receiver's open node-mates
  std::vector<int64_t> receiver_left_;              // the receiver's experts' tokens not yet shed
  std::vector<int64_t> shed_pieces_;                // the receiver's sheds, in the order made
};

}  // namespace taot::planners

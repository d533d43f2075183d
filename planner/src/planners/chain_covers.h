// The chain covers of the expert level of `taot`: a rank that both receives and sends, so one
// inter-node piece and a few cheap intra-node ones replace several inter-node pieces. With
// tight slots they are what the exact optimum uses (docs/planners.md). Two-level topologies
// only: elsewhere they plan nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "planners/placement_state.h"

namespace taot::planners {

// A piece of a chain's receiver's own expert on one of its node-mates.
struct Shed {
  int expert;
  int mate;
  int64_t tokens;
};

// One cross-node piece of h's expert to a receiver, which then sheds `overflow` tokens of its
// own experts to its node-mates: either the pieces in `sheds`, or (empty) intra-node pieces left
// to the receiver's node's cover, their estimated cost booked as the state's debt.
struct Handoff {
  int expert;
  int receiver;
  int64_t tokens;
  int64_t overflow;  // what the receiver must shed
  double cost;       // the piece plus the receiver's sheds (estimated where `sheds` is empty)
  std::vector<Shed> sheds;
};

class ChainCovers {
 public:
  // How a chain's receiver sheds into its node-mates' rooms and slots, and so how far the
  // estimate trusts the receiver's node:
  // - kWhole: a carry's receiver sheds its biggest experts whole (first fit, decreasing), and a
  //   handoff counts all the node's room as free, even room an earlier receiver's overflow
  //   needs (optimistic: the node's cover often finds room the estimate does not see, and the
  //   plan that results decides);
  // - kPieces: a carry's receiver sheds its experts whole where they fit, then fills each
  //   mate's room left, roomiest first, with pieces of its fullest experts (at a tight cap every
  //   room must be filled to the brim, and a burst's receiver's experts are bigger than any
  //   mate's room), and the carry makes those sheds itself, so its cost is exact; a handoff
  //   leaves the room the node owes.
  enum class Sheds { kWhole, kPieces };

  // What PlanCarry weighs of a node that does not depend on the carrier: its ranks' surplus, its
  // open ranks by room and their room, and each receiver's sheds (PlanHandoff reads the first
  // three where they are current), kept under the node's stamp
  // (PlacementState::node_stamp) and the way of shedding: it stands for the node for as long as
  // the node is as it was, across carries, trials and passes, and is surveyed again once the
  // node has changed. For one PlacementState only.
  class CarryCache {
   private:
    friend class ChainCovers;
    struct Receiver {
      int rank;
      std::vector<Shed> sheds;  // as ShedWhole or ShedPieces make them, before any trimming
      // Per shed, what a carry reads of it that the node's stamp fixes: read here, not from the
      // state, each time a carry weighs the receiver again.
      struct Terms {
        double cost;  // the shed's piece
        bool whole;   // whether it is all that is left of its expert
      };
      std::vector<Terms> terms;
      int64_t total = 0;  // their tokens
    };
    struct Node {
      uint64_t stamp = 0;  // the node's stamp when surveyed (0: never; stamps start at 1)
      Sheds sheds = Sheds::kWhole;
      int64_t owed = 0;
      int64_t room = 0;                           // its open ranks' room
      std::vector<std::pair<int64_t, int>> open;  // (room, -rank), roomiest first
      // The first `weighed` are those weighed so far; the rest keep their memory for later.
      std::vector<Receiver> receivers;
      size_t weighed = 0;
    };
    std::vector<Node> nodes_;
  };

  // A handoff of h's whole surplus (its biggest expert that holds it all) to a receiver g with
  // less room than that: per other node the roomiest open rank not holding the expert, if the
  // node's other room can take the overflow and g's biggest experts add up to it (one shed
  // each). The cheapest wins, then the smaller overflow, then the lower rank. None for a surplus
  // over the cap, at once: a rank with room has its load and room add up to the cap and holds
  // at most its load in tokens of its own, so its room and all it could shed are at most the cap
  // (the moves of taot_placement.h keep this; ChainCoversTest holds them to it).
  // O(R + nodes x (E/R) log(E/R)); with a cache (PlanCarry's), a node it surveyed under the
  // node's present stamp is read from there, not scanned.
  std::optional<Handoff> PlanHandoff(const PlacementState& state, int h, Sheds sheds,
                                     const CarryCache* cache = nullptr);
  // A carrier's handoff: as much of h's expert e as one receiver in another node can take, its
  // room plus what it sheds, after the node's own surplus, and at most `most`. The biggest such
  // piece wins, then the cheapest, then the lower rank. The piece may exceed h's surplus (Export).
  // O(R log R + nodes x (E/R) x ranks per node). Once a carry is found, a receiver whose reach
  // and sheds' cost are bounded beyond it is not weighed (CannotBeat): the answer is the same.
  // With a cache, what it holds of a node under the node's stamp stands for it. The carry is
  // this object's, valid until its next PlanCarry (null when there is none): a run of carries
  // allocates nothing once its memory has grown.
  const Handoff* PlanCarry(const PlacementState& state, int h, int e, Sheds sheds,
                           int64_t most = std::numeric_limits<int64_t>::max(), CarryCache* cache = nullptr);
  // Whether PlanCarry rules receivers out on bounds (CannotBeat) before weighing their sheds: on
  // by default; off only to check that the bounds change no carry.
  void set_bounded(bool bounded) { bounded_ = bounded; }
  // Whether h's biggest expert is more than three times as big as every bin outside h's node: only
  // then does a handoff carry what would otherwise take several inter-node pieces (measured on
  // the frontier cases: below that, the trial costs time and saves nothing). h's node must be
  // the one being covered (PlacementState::DeferNode), or none: the roomiest bin of another node
  // is read from the open bins' index, O(ranks of h's node) at worst.
  static bool CanHandOff(const PlacementState& state, int h);
  // Make the chain's piece, leave the receiver its overflow as surplus, book the sheds as debt.
  static void ApplyHandoff(PlacementState& state, int h, const Handoff& handoff);
  static void ApplyCarry(PlacementState& state, int h, const Handoff& carry);

 private:
  // How many of a node's roomiest ranks a carry with Sheds::kPieces weighs as receivers.
  static constexpr size_t kReceiversWeighed = 4;
  struct Own {
    int64_t tokens;  // left
    int expert;
  };
  struct Mate {
    int64_t room;
    int slots;
    int rank;
  };
  // The receiver's experts, biggest first (the lower expert among equals), into receiver_left_.
  const std::vector<Own>& ReceiverExperts(const PlacementState& state, int g);
  // Whether `mate` holds a piece of the receiver's expert e: only a receiver with pieces of its
  // own (rare: receivers are not hot) has any, so the slots are read only then.
  bool MateHolds(const PlacementState& state, int e, int mate) const {
    return receiver_has_pieces_ && state.Holds(e, mate);
  }
  // Roomiest first, then the most slots, then the lower rank.
  void SortMates();
  // receiver_left_'s experts whole into mates_ (first fit, biggest first), into sheds_;
  // stops at the first that fits no mate unless `past_misfits`.
  void ShedWhole(const PlacementState& state, bool past_misfits);
  // ShedWhole past misfits, then pieces into the rooms left, into sheds_ (Sheds::kPieces).
  void ShedPieces(const PlacementState& state);
  // Node n's carrier-free part (CarryCache::Node), computed.
  void Survey(const PlacementState& state, int n, Sheds sheds, CarryCache::Node& node) const;
  // The room receiver g's sheds can take in its node (its survey): its open mates' room less the
  // node's own surplus, which takes that room first.
  static int64_t MatesRoom(const PlacementState& state, const CarryCache::Node& node, int g) {
    return std::max<int64_t>(0, node.room - state.spare(g) - node.owed);
  }
  // Whether receiver g of `node` (its survey) reaches less than `best_reach` for h's expert e,
  // by room alone: its own room and its mates' room after the node's own surplus, at most
  // max(g's room, the node's room less that surplus). Along the survey's open ranks (roomiest
  // first) that bound never grows, so once it rules one receiver out it rules out the node's
  // later ones, weighed or not (their reach is at most it).
  static bool RoomCannotReach(const PlacementState& state, const CarryCache::Node& node, int e, int g, int64_t most,
                              int64_t best_reach);
  // Whether receiver g of `node` (its survey), which RoomCannotReach did not rule out, surely
  // loses to the carry keyed `best` (-reach, cost, receiver) for h's expert e: bounds on its
  // reach and on its sheds' cost say so without weighing its sheds.
  static bool CannotBeat(const PlacementState& state, const CarryCache::Node& node, int h, int e, int g, Sheds sheds,
                         int64_t most, const std::tuple<int64_t, double, int>& best);
  // Receiver g's sheds into its node-mates' rooms after the node's own surplus, into sheds_;
  // `node` is g's node's survey, current.
  void ReceiverSheds(const PlacementState& state, const CarryCache::Node& node, int g, Sheds sheds);

  std::vector<Own> receiver_left_;    // what the receiver has not shed yet
  bool receiver_has_pieces_ = false;  // of its own experts, on other ranks
  std::vector<Mate> mates_;           // the receiver's open node-mates, their room and slots left
  int64_t most_mate_room_ = 0;        // at least the most room of any of them
  std::vector<Shed> sheds_;           // the receiver's sheds, in the order made
  CarryCache::Node survey_;           // a node's survey when there is no cache
  Handoff carry_;                     // PlanCarry's answer
  bool bounded_ = true;
};

}  // namespace taot::planners

// The expert level of `taot`: which experts get a guest replica where, to bring every rank
// under a load cap at the least weight-transfer cost.
#pragma once

#include <cstdint>
#include <vector>

#include "planners/plan_building.h"
#include "taot/planner/plan_request.h"

namespace taot::planners {

// A replica and the tokens it takes off its home: a GuestShare under construction.
using Piece = GuestShare;

// The problem: every hot rank h (load above the cap) must shed its surplus through replicas of
// its own experts on ranks with spare room (cap - load), each rank holding at most K replicas;
// a new replica costs topology.cost(home, guest), reusing a resident one costs nothing.
// Weighted cost counts replicas, not tokens, so the aim is few replicas, each carrying a large
// piece, inside the node where the node's spare room allows.
//
// The method, per cap:
// 1. resident replicas that can help are used first (free);
// 2. nodes are visited with the exact rank-level transport's verdict: nodes the optimal
//    transport leaves self-sufficient first, then nodes that must export, the largest exporter
//    first (the node-level flow comes from SolveTreeTransport, or SolveMinCostTransport on a
//    general matrix);
// 3. inside a node, for every subset of its (up to kMaxEnumerated largest) hot ranks, the
//    subset is covered from other nodes and the rest from inside the node, each rank by
//    best-fit pieces (one piece that finishes the rank if any fits, the biggest piece
//    otherwise); the cheapest outcome is kept. Exporting a whole rank in one cross-node piece
//    (cost λ) often beats covering it inside the node in several pieces, and this finds it;
// 4. what is still uncovered takes pieces from anywhere.
class Placement {
 public:
  static constexpr int kMaxEnumerated = 6;

  Placement(const PlanRequest& request, const LoadSums& sums);
  // Fills `pieces` and returns true when every rank ends at or under `cap`.
  bool Place(int64_t cap, std::vector<Piece>& pieces);

 private:
  struct State {
    std::vector<int64_t> surplus;      // per rank: load above the cap still to shed
    std::vector<int64_t> spare;        // per rank: room under the cap still free
    std::vector<int64_t> expert_left;  // per expert: tokens still at home
    std::vector<int> free_slots;       // per rank
    std::vector<Piece> pieces;
    double cost = 0;
    int64_t unmet = 0;
  };
  enum class Scope { kSameNode, kOtherNodes, kAnywhere };

  void Reset(int64_t cap);
  void UseResident(State& st) const;
  std::vector<int> NodeOrder(const State& st);
  void CoverNode(State& st, int node) const;
  // Covers as much of h's surplus as the scope allows, greedily; returns what is left.
  int64_t CoverRank(State& st, int h, Scope scope) const;
  // Covers h in one piece inside the scope if some rank fits it whole (best fit).
  bool PlaceWhole(State& st, int h, Scope scope) const;
  // The cheapest cover of h by at most two new pieces (exact over the bins that matter: the
  // tightest fit for a single piece; the roomiest bin of a class plus the tightest fit for the
  // rest); applies it and returns true, or returns false when two pieces cannot cover h.
  bool CoverInTwo(State& st, int h, bool allow_same_node) const;
  // The cheaper of CoverInTwo and the greedy split (SplitCover, or CoverRank across nodes).
  void BestCover(State& st, int h, bool allow_same_node) const;
  // Covers h partly inside its node and the rest from other nodes, at the least cost.
  void SplitCover(State& st, int h) const;
  // Adds what h's existing pieces in scope can still take (no new weights move).
  void GrowPieces(State& st, int h, Scope scope) const;
  int BestFitBin(const State& st, int h, int e, int64_t want, Scope scope) const;
  int LargestExpert(const State& st, int h) const;
  bool CanHost(const State& st, int h, int e, int c, Scope scope) const;
  double PieceCost(int h, int e, int c) const;
  void AddPiece(State& st, int h, int e, int c, int64_t amount) const;
  bool InScope(int h, int c, Scope scope) const;
  int PieceIndex(const State& st, int expert, int rank) const;

  const PlanRequest& request_;
  const LoadSums& sums_;
  std::vector<char> resident_;  // expert * R + rank
  std::vector<int> cold_;       // ranks with room under the cap, in rank order
  std::vector<int64_t> exports_;  // per node: what the optimal transport sends out of it
  State state_;
};

}  // namespace taot::planners

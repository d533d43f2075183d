// The expert level of `taot`: which experts get a guest replica where, to bring every rank
// under a load cap at the least weight-transfer cost.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <tuple>
#include <vector>

#include "planners/chain_covers.h"
#include "planners/placement_state.h"
#include "planners/plan_building.h"
#include "planners/sequence_cover.h"
#include "planners/split_cover.h"
#include "planners/trial_states.h"
#include "planners/two_piece_cover.h"
#include "taot/planner/plan_request.h"

namespace taot::planners {

// The problem: every hot rank (load above the cap) must shed its surplus through replicas of
// its experts on ranks with room (cap - load), each rank holding at most K replicas; a new
// replica costs topology.cost(home, guest), reusing a resident one costs nothing. The cost
// counts replicas, not tokens, so the aim is few replicas, each carrying a big piece, inside
// the node where the node's room allows. It is bin packing with item fragmentation, plus costs
// and slots; tests/bench/milp_reference.py solves it exactly, slowly.
//
// The method, per cap:
// 1. resident replicas that can help are used first (free: UseResident);
// 2. nodes are covered in the order the exact rank-level transport gives (SolveTreeTransport, or
//    SolveMinCostTransport on a general matrix): nodes it leaves self-sufficient first, then the
//    exporters, the largest first; a second pass takes the exporters first (they then get the
//    roomiest bins elsewhere), where a self-sufficient node has a hot rank (else its order is
//    the first's) and not after a burst's pieces pass with fewer than half the nodes
//    exporting; with (almost) no slack, northwest-corner passes in a few orders
//    too (sequence_cover.h); the cheapest pass that meets the cap wins;
// 3. in a node (CoverNode), hot ranks in decreasing surplus first take the single intra-node
//    piece that finishes them (best fit: PlaceWhole); the rest get the cheapest of an exact
//    search over covers of at most two pieces (two_piece_cover.h), a split (j pieces inside
//    the node, the rest from other nodes, the best j: split_cover.h) and a handoff (one
//    cross-node piece to a rank that sheds its own experts to its node-mates: chain_covers.h).
//    An exporting node also tries carriers: its hot ranks with the biggest experts send a whole
//    expert across nodes and take their node-mates' surplus; a burst's expert, too big for any
//    bin elsewhere, is handed off instead (ChainCovers::PlanCarry), on an estimate with whole
//    sheds; a pieces pass hands it off with pieces to one receiver per node that must take
//    some (Pass::sheds): on a burst (a surplus over twice the roomiest bin) it goes first, for
//    it usually wins there by far (and where it meets the cap with only exporting nodes hot,
//    fewer than half the nodes, it is the plan); elsewhere it goes last, where a handoff was
//    weighed. In a pieces pass a node that can hand off and whose excess is more than any one
//    bin elsewhere takes hands off all its carriers first; where that leaves nothing over it is
//    the node's cover. Elsewhere the handoff is weighed after the cover without carriers, where
//    that crosses nodes twice or more, and kept where it leaves nothing over or no more than
//    that cover (a lost cover: nothing over), the plain carrier trials running only where it is
//    not kept;
// 4. what is still uncovered takes pieces from anywhere (CoverRank), after crumbs of room stuck
//    in full ranks have moved, through their pieces, to ranks with free slots (AbsorbCrumbs).
// Handoffs and carriers are chains (a rank both sends and receives); with tight slots they are
// what the exact optimum uses (docs/planners.md).
//
// Speed: a pass stops once its cost and a floor under what the nodes still to cover will cost
// reach the best plan's so far, and inside a node so does each trial: a trial that would reach
// the pass's bound less that floor is lost (it makes nothing more), and a node that keeps a lost
// trial loses the pass; a trial also stops at the best trial's cost and debt where that leaves
// nothing over. Options are weighed on sketches (placement_sketch.h:
// what a cover would change, kept apart from the state); CoverNode's trials are undone through
// the state's log (placement_state.h) or, a burst's, through copies of the state
// (trial_states.h); on a two-level topology the open bins are kept sorted by room, so a best-fit
// query is a binary search. A burst's whole-sheds pass starts where its pieces pass left the
// nodes they cover alike (SharedStart).
class Placement {
 public:
  // How many of an exporting node's hot ranks CoverNode tries as carriers of whole experts.
  static constexpr int kMaxCarriers = 3;

  // Binds the placement to one request (the references must outlive the Place calls); buffers
  // are kept between requests, so a planner that reuses one Placement allocates little.
  void Prepare(const PlanRequest& request, const LoadSums& sums);
  // Fills `pieces` and returns true when every rank ends at or under `cap`: the cheapest of its
  // passes, or (`first_met`) the first pass that meets the cap, for a caller that only asks
  // whether the cap can be met.
  bool Place(int64_t cap, std::vector<Piece>& pieces, bool first_met = false);
  // Whether a burst's whole-sheds pass starts after the nodes it shares with the pieces pass
  // (SharedStart): on by default; off only to check that this changes no plan.
  void set_share_start(bool share) { share_start_ = share; }
  // The nodes the last Place's pieces pass recorded for the pass after it (0: none).
  size_t shared_nodes() const { return shared_.nodes; }
  // Whether a pieces pass's node that can hand off does so before its cover without carriers
  // (CoverNode): kOn by default; kOff, or kUndone (each first handoff made, counted and undone,
  // as if it had left some over), only to check what that changes.
  enum class HandoffFirst { kOn, kOff, kUndone };
  void set_handoff_first(HandoffFirst first) { handoff_first_ = first; }
  // The last Place's handoffs made first: how many, and how many of them covered their node.
  struct FirstHandoffs {
    int made = 0;
    int covered = 0;
  };
  const FirstHandoffs& first_handoffs() const { return first_handoffs_; }
  // The state the last Place's last pass left: for tests of what a pass leaves behind.
  const PlacementState& state() const { return state_; }

 private:
  // One way through steps 2 to 4.
  struct Pass {
    bool exporters_first;  // the exporting nodes before the self-sufficient ones
    // The chains' estimates (ChainCovers::Sheds); with kPieces an exporting node's carriers
    // hand off wherever that covers as much, with kWhole where the estimate says it is cheaper.
    ChainCovers::Sheds sheds;
    std::optional<SequenceCover::Order> sequence;  // northwest-corner covers instead of CoverNode
  };
  // A trial stops (trial_lost_) once its cost would reach `cost`, the pass's bound (kept, it
  // would lose the pass; the debt is an estimate, so it does not count), or its cost and debt
  // reach `cost_and_debt`, the best trial's where that leaves nothing over (it cannot beat it).
  struct TrialBound {
    double cost = std::numeric_limits<double>::infinity();
    double cost_and_debt = std::numeric_limits<double>::infinity();
  };
  // Covers every node in one pass from the state after step 1; (surplus left, cost), or nothing
  // once its cost reaches `bound` (the pass cannot beat a plan of that cost).
  std::optional<std::tuple<int64_t, double>> CoverAll(const std::vector<int>& order, const Pass& pass, double bound);
  // The order of step 2; also fills exports_ and clears the carrier choices.
  const std::vector<int>& NodeOrder();
  void CoverNode(int node);
  // PlaceWhole for every hot rank of the node (hot_), then BestCover for those still hot.
  void CoverHot();
  // Whether the node's excess (its surplus less its open ranks' room) is more than any open rank
  // of another node has room for: covering it with plain pieces crosses nodes twice or more (a
  // handoff, whose receiver sheds to its node-mates, may cross once).
  bool ExcessNeedsTwoCrossings(int node) const;
  // Sheds::kPieces carriers: they hand their biggest experts off, in turn, to receivers in other
  // nodes until the node's excess is gone.
  void CarryPieces(int node, std::span<const int> carriers);
  // Whether a node the rank-level transport leaves self-sufficient has a hot rank (in the state
  // after step 1).
  bool SelfSufficientNodeIsHot() const;
  // Whether two of `pieces` cross from the same node to the same other node.
  bool CrossesTwiceBetweenTwoNodes(const std::vector<Piece>& pieces);
  // The cheapest of the two-piece cover, the split and a handoff, unless it loses the trial.
  void BestCover(int h);
  // Whether h's handoff would be another with the other way of shedding (ChainCovers::Sheds):
  // what ends the nodes that passes in the transport's order share (SharedStart).
  bool HandoffDependsOnSheds(int h, const std::optional<Handoff>& handoff);
  // Whether a pass with `bound` covers every shared node as the recording pass (no bound) did:
  // its trials' bound decides only what reaches it, unless a split that leaves some over was kept
  // there (with a bound, another split may have been ruled out and the trial lost). Otherwise the
  // pass covers them itself, as it would stop or decide otherwise there.
  bool SharedNodesUnderBound(double bound) const;
  // Whether the trial is lost (trial_lost_), or is lost by reaching `cost` and `debt`.
  bool LosesTrial(double cost, double debt);
  // LosesTrial for h's carry, before it is made.
  bool LosesCarry(const Handoff& carry, int h);

  PlacementState state_;
  PlacementState::Values base_;  // the state after step 1, where every pass starts
  TwoPieceCover two_piece_;
  SplitCover split_;
  ChainCovers chains_;
  ChainCovers::CarryCache carry_cache_;  // what carries weighed of the nodes, for state_
  SequenceCover sequence_;
  std::vector<int64_t> exports_;          // per node: what the exact rank-level transport sends out
  std::vector<double> node_floor_;        // per node: what covering it costs at least (node_floors.h)
  bool floors_set_ = false;               // whether node_floor_ holds this Place's floors
  std::vector<int> node_order_;           // NodeOrder's
  std::vector<int> pass_nodes_;           // CoverAll's order of the nodes
  std::vector<double> floor_rest_;        // CoverAll's: the floors of the nodes after each
  std::vector<int> carriers_chosen_;      // per node: carriers CoverNode chose first (-1: not yet)
  std::vector<char> carriers_handing_;    // per node: whether those carriers hand off
  std::vector<int64_t> supply_, demand_;  // the rank-level transport's input, consumed
  std::vector<int> demand_ranks_;
  std::vector<int> hot_;        // the node's hot ranks, biggest surplus first
  std::vector<int> by_expert_;  // the node's hot ranks, biggest expert first: carriers to try
  ChainCovers::Sheds sheds_ = ChainCovers::Sheds::kWhole;  // the pass's
  bool handoff_tried_ = false;                             // whether a pass weighed a carriers' handoff
  std::vector<int> crossings_;                             // (from node, to node) of cross-node pieces, as one index
  TrialStates trials_;                                     // CoverNode's further trials
  double pass_bound_ = std::numeric_limits<double>::infinity();  // CoverAll's bound on the cost
  TrialBound bound_;                                             // the trial's
  bool trial_lost_ = false;
  bool node_lost_ = false;  // CoverNode kept a lost trial: the pass cannot beat its bound
  // The first nodes of the transport's order, before the first exporter: there a pass covers a
  // node the same way whatever its sheds (Pass::sheds reaches only exporters' carriers and
  // handoffs), unless a handoff weighed would differ, and whatever its bound while the bound is
  // not reached (SharedNodesUnderBound). A burst's pieces pass (no bound)
  // records what it made of them, and the whole-sheds pass after it starts from there
  // (docs/performance.md: 7-9% of an EP64 burst of R/8 experts; elsewhere a later pass in that
  // order is rare, and recording would cost a copy of the state).
  struct SharedStart {
    bool record = false;  // the next pass in the transport's order records
    bool recording = false;
    bool split_left_over = false;  // a shared node kept a split that leaves some over
    size_t nodes = 0;              // covered in `state` (0: nothing shared)
    PlacementState::Values state;  // the state after them
    std::vector<double> costs;     // the cost after each, for the later pass's bound
  };
  SharedStart shared_;
  bool share_start_ = true;
  HandoffFirst handoff_first_ = HandoffFirst::kOn;
  FirstHandoffs first_handoffs_;
};

}  // namespace taot::planners

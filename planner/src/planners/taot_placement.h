// The expert level of `taot`: which experts get a guest replica where, to bring every rank
// under a load cap at the least weight-transfer cost.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "planners/plan_building.h"
#include "taot/planner/plan_request.h"

namespace taot::planners {

// A replica and the tokens it takes off its home: a GuestShare under construction.
using Piece = GuestShare;

// The problem: every hot rank (load above the cap) must shed its surplus through replicas of
// its experts on ranks with room (cap - load), each rank holding at most K replicas; a new
// replica costs topology.cost(home, guest), reusing a resident one costs nothing. The cost
// counts replicas, not tokens, so the aim is few replicas, each carrying a big piece, inside
// the node where the node's room allows. It is bin packing with item fragmentation, plus costs
// and slots; tests/bench/milp_reference.py solves it exactly, slowly.
//
// The method, per cap:
// 1. resident replicas that can help are used first (free);
// 2. nodes are covered in the order the exact rank-level transport gives (SolveTreeTransport, or
//    SolveMinCostTransport on a general matrix): nodes it leaves self-sufficient first, then the
//    exporters, the largest first; a second pass takes the exporters first (they then get the
//    roomiest bins elsewhere); with (almost) no slack, northwest-corner passes in a few orders
//    too (SequenceCover); the cheapest pass that meets the cap wins;
// 3. in a node (CoverNode), hot ranks in decreasing surplus first take the single intra-node
//    piece that finishes them (best fit); the rest get the cheapest of an exact search over
//    covers of at most two pieces (CoverInTwo), a split (j pieces inside the node, the rest from
//    other nodes, the best j) and a handoff (one cross-node piece to a rank that sheds its own
//    experts to its node-mates). An exporting node also tries carriers: its hot ranks with the
//    biggest experts send a whole expert across nodes and take their node-mates' surplus; a
//    burst's expert, too big for any bin elsewhere, is handed off instead (PlanCarry);
// 4. what is still uncovered takes pieces from anywhere, after crumbs of room stuck in full
//    ranks have moved, through their pieces, to ranks with free slots.
// Handoffs and carriers are chains (a rank both sends and receives); with tight slots they are
// what the exact optimum uses (docs/planners.md).
//
// Speed: options are weighed on sketches (what a cover would change, kept apart from the
// state); CoverNode's trials are undone through a log; on a two-level topology the open bins
// are kept sorted by room, so a best-fit query is a binary search.
class Placement {
 public:
  // How many of an exporting node's hot ranks CoverNode tries as carriers of whole experts.
  static constexpr int kMaxCarriers = 3;

  // Binds the placement to one request (the references must outlive the Place calls); buffers
  // are kept between requests, so a planner that reuses one Placement allocates little.
  void Prepare(const PlanRequest& request, const LoadSums& sums);
  // Fills `pieces` and returns true when every rank ends at or under `cap`.
  bool Place(int64_t cap, std::vector<Piece>& pieces);

 private:
  enum class Scope { kSameNode, kOtherNodes, kAnywhere };
  struct Option {
    double cost = 0;
    int pieces = 0;
    // Tie-break between options of equal cost and size, smaller first: the room of the bin a
    // single piece fits tightest; for two pieces, minus the room of the second bin (two roomy
    // bins beat a roomy and a tight one: measured over the frontier cases).
    int64_t tightness = 0;
    Piece first, second;
  };
  using Bin = std::pair<int64_t, int>;  // (room, rank)
  // A change made while CoverNode tries its covers: enough to undo it, and to make it again.
  struct Undo {
    enum Kind : uint8_t { kAdd, kGrow, kRoom, kDebt } kind;
    int rank;  // kAdd, kGrow: the home rank; kRoom: the rank
    int expert = 0, bin = 0, piece = 0;
    int64_t amount = 0;                              // kAdd, kGrow
    int64_t surplus = 0, spare = 0;                  // kRoom: the new values
    int64_t old_surplus = 0, old_spare = 0;          // kRoom
    int old_last = -1;                               // kAdd: the home's last piece before
    double debt = 0;                                 // kDebt
    double old_cost = 0, old_debt = 0;
  };
  // A cover of at most two pieces by the class of its bins (0: h's node, 1: other nodes).
  struct Shape {
    int cls1, cls2;  // cls2 < 0: one piece
    double cost;     // on a two-level topology; 0 otherwise (every shape is tried)
    int pieces;
  };

  // What a cover of hot rank h would change, kept apart from the state: tokens it would take
  // from bins and experts, and the pieces it would add.
  struct Touch {
    int expert;
    int bin;
    int64_t amount;
    bool new_piece;
  };
  struct Sketch {
    int h = 0;
    int64_t rem = 0;
    double cost = 0;
    std::vector<Touch> touches;
    // Sums of the touches, kept in step by Add and Truncate (zero where untouched).
    std::vector<int64_t> used;     // per rank: tokens added to it
    std::vector<int> new_pieces;   // per rank: pieces added to it
    std::vector<int64_t> taken;    // per expert: tokens taken from it
    void Resize(int ranks, int experts);
    void Start(int h, int64_t rem);
    void Add(int e, int c, int64_t amount, bool new_piece, double piece_cost);
    // Forgets the touches after the first n; rem and cost are the caller's to restore.
    void Truncate(size_t n);
    bool Placed(int e, int c) const;
  };

  void Reset(int64_t cap);
  void UseResident();
  std::vector<int> NodeOrder();
  void CoverNode(int node);
  // When ranks are still over the cap and the room left sits in ranks with no free slot, their
  // pieces grow into it, so that the room moves to the pieces' homes, which do have slots: a
  // chain the remaining surplus can use.
  void AbsorbCrumbs();
  // The northwest-corner rule of transport problems, node by node and then across nodes.
  struct SequenceOrder {
    enum Hot { kBiggestSurplusLast, kBiggestExpertLast, kRankOrder } hot;  // inside a node
    bool roomiest_bin_last;         // inside a node; else rank order
    bool smallest_remainder_first;  // across nodes, into the roomiest bins; else rank order
  };
  void SequenceCover(const std::vector<int>& nodes, SequenceOrder order);
  // Pieces from hot[i] into bins[j] in order, each finishing a rank, filling a bin or using up
  // an expert.
  void Walk(const std::vector<int>& hot, const std::vector<int>& bins);
  // PlaceWhole for every hot rank of the node, then BestCover for those still hot.
  void CoverHot();
  // A piece of h's expert e to c that may exceed h's surplus; the excess becomes room on h.
  void Export(int h, int e, int c, int64_t amount);
  // Greedy: biggest expert, best-fit bin, until h is covered or the scope has no room.
  void CoverRank(int h, Scope scope);
  // One piece inside h's node that finishes h, if some bin fits it whole.
  void PlaceWhole(int h);
  // The cheapest of CoverInTwo, the split (PlanSplit) and a handoff (PlanHandoff).
  void BestCover(int h);
  std::optional<Option> CoverInTwo(int h);
  // A handoff: h's whole surplus in one cross-node piece to a receiver g with less room than
  // that; g then sheds its own biggest experts to its node-mates (intra-node pieces), so one
  // inter-node piece and a few cheap ones replace several inter-node pieces.
  struct Handoff {
    int expert;
    int receiver;
    int64_t tokens;
    int64_t overflow;  // what the receiver must shed
    double cost;       // the piece plus the receiver's sheds (estimated)
  };
  std::optional<Handoff> PlanHandoff(int h);
  void ApplyHandoff(int h, const Handoff& handoff);
  // A carrier's handoff: as much of h's expert e as one receiver in another node can take,
  // its room plus its own experts that fit whole into its node-mates' rooms and slots, after
  // earlier receivers' sheds (the biggest such piece, then the cheapest). The piece may exceed
  // h's surplus (Export).
  std::optional<Handoff> PlanCarry(int h, int e);
  // Whether h's biggest expert is more than three times as big as every bin outside h's node: only
  // then does a handoff carry what would otherwise take several inter-node pieces (measured on
  // the frontier cases: below that, the trial costs time and saves nothing).
  bool CanHandOff(int h) const;
  void ApplyCarry(int h, const Handoff& carry);
  // The split: j pieces inside the node (biggest expert, roomiest bin), then the rest from other
  // nodes (CoverRank). PlanSplit finds the cheapest j on a sketch and returns it with its
  // (surplus left, cost), giving up on splits dearer than `bound`; ApplySplit makes that cover.
  int PlanSplit(int h, double bound, std::tuple<int64_t, double>& key);
  void ApplySplit(int h, int inside);
  void GrowPieces(int h, Scope scope);

  // The real queries, seen through a sketch.
  int64_t SketchRoom(const Sketch& sk, int c) const;
  bool SketchCanHost(const Sketch& sk, int e, int c) const;
  int SketchLargestExpert(const Sketch& sk) const;
  int SketchBestFitOther(const Sketch& sk, int e, int64_t want) const;
  // CoverRank(h, kOtherNodes) on the sketch.
  void SketchCoverOtherNodes(Sketch& sk) const;
  // The split's next piece inside h's node: the biggest expert into the roomiest bin.
  bool NextInside(const Sketch& sk, int& e, int& c) const;

  int BestFitBin(int h, int e, int64_t want, Scope scope) const;
  int BestFitOtherNodes(int h, int e, int64_t want) const;
  int LargestExpert(int h) const;
  bool Holds(int e, int c) const;
  bool IsOpen(int c) const { return st_.spare[c] > 0 && st_.slots[c] > 0; }
  bool CanHost(int h, int e, int c, Scope scope) const;
  bool InScope(int h, int c, Scope scope) const;
  double PieceCost(int h, int e, int c) const;

  void AddPiece(int h, int e, int c, int64_t amount);
  void GrowPiece(int h, int piece, int64_t amount);
  // Sets a rank's surplus and room outright (a carrier or a handoff's receiver).
  void SetRoom(int r, int64_t surplus, int64_t spare);
  void AddDebt(double debt);
  void Log(Undo& u);
  // Undoes the changes after `mark`, appending them (in order) to `redo` when given.
  void Rollback(size_t mark, std::vector<Undo>* redo);
  void Redo(const std::vector<Undo>& changes);
  // Moves `amount` tokens of e from h to c and takes `slots` slots of c.
  void Shift(int h, int e, int c, int64_t amount, int slots);
  // Puts bin c where its room says in open_other (or takes it out once closed).
  void Reconcile(int c);

  const PlanRequest* request_ = nullptr;
  const LoadSums* sums_ = nullptr;
  bool tree_ = false;
  TreeCosts tree_costs_;
  std::vector<Replica> resident_;  // sorted
  std::vector<int64_t> exports_;  // per node: what the exact rank-level transport sends out
  std::vector<int> carriers_chosen_;  // per node: carriers CoverNode chose first (-1: not yet)
  std::vector<char> carriers_handing_;  // per node: whether those carriers hand off
  std::vector<int64_t> supply_, demand_;  // NodeOrder's scratch
  std::vector<int> demand_ranks_;

  // Everything a cover changes; Place copies it once to try the second node order from the
  // same start.
  struct State {
    std::vector<int64_t> surplus, spare, left;
    std::vector<int> slots;
    double cost = 0;
    std::vector<Piece> pieces;
    // Pieces of each home rank in order, as a list: first[h], then next[piece] (-1 ends).
    std::vector<int> first, last, next;
    std::vector<int> held;           // per rank, the experts of its pieces (K entries)
    std::vector<Bin> open_other;     // open bins by (room, rank) (two-level topologies only)
    std::vector<int64_t> indexed;    // per bin, the room open_other has it under (-1: absent)
    double debt = 0;  // estimated cost of the sheds that this node's handoffs leave to others
  };
  State st_, base_;
  std::vector<Undo> log_;
  bool logging_ = false;  // only while CoverNode tries covers it may undo
  std::vector<Undo> best_changes_;  // CoverNode's better cover, undone to try another
  int deferred_node_ = -1;  // the node being covered: its bins are reconciled at the end
  std::vector<Bin> same_bins_, other_bins_;  // CoverInTwo's scratch
  std::vector<int> hot_, carriers_;          // CoverNode's scratch
  std::vector<int64_t> own_;                 // PlanHandoff's and PlanCarry's scratch
  std::vector<std::pair<int64_t, int>> mates_;  // PlanCarry's scratch
  Sketch sketch_;
  std::array<Shape, 6> shapes_;  // in the order CoverInTwo tries them
};

}  // namespace taot::planners

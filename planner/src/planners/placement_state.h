// The state the expert level of `taot` builds for one load cap, and its undo log: what every
// cover strategy reads and changes (taot_placement.h says how they use it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "planners/array_block.h"
#include "planners/plan_building.h"
#include "taot/planner/plan_request.h"
#include "taot/planner/topology.h"

namespace taot::planners {

// A replica and the tokens it takes off its home: a GuestShare under construction.
using Piece = GuestShare;

// Where a cover may put a piece of hot rank h, by the node of the bin.
enum class Scope { kSameNode, kOtherNodes, kAnywhere };

// A rank with room, as the sorted bin lists hold it, ordered by (room, rank). A plain struct,
// not a std::pair, so that the lists move their entries as blocks: a pair's assignment is not
// trivial, and moving an index entry past a hundred others one by one was 8% of an EP256 plan.
struct Bin {
  int64_t room;
  int rank;
  auto operator<=>(const Bin&) const = default;
};

// The placement at one cap: per rank its surplus (load over the cap, to shed), its room
// (spare: under the cap) and its free guest slots; per expert its tokens not yet placed (left);
// the pieces so far and their weight-transfer cost (a new replica costs topology.cost(home,
// guest), a resident one nothing).
//
// Changes: AddPiece, GrowPiece, SetRoom and AddDebt. While logging is on, each is recorded with
// what it overwrote, so Rollback(mark) restores the state exactly as it was at `mark` (costs
// are restored, not subtracted back, so they match bit for bit) and can hand the undone
// changes over for Redo, which makes them again in order. values() and Restore() copy the
// whole state for a second attempt from the same start.
//
// Queries: on a two-level topology the open bins (room and a free slot) are kept sorted by
// (room, rank) in open_bins(), so a best fit across nodes is a binary search. The bins of the
// node being covered (DeferNode) are only asked for by that node's own ranks, which skip them
// there, so they are re-sorted once when the node is done (EndDeferral); after ResetDeferred every
// bin waits so, for changes made before the index is asked anything.
//
// Complexity: a change is O(1) plus re-sorting its bin, which moves one entry as far as its
// room changed places (O(bins) at worst); Holds is O(K); BestFitBin is a binary search plus
// the bins skipped across nodes, O(ranks of the node) inside one, O(R) on a general matrix.
// Ties go to the lower rank, and among experts of equal size to the lower expert.
class PlacementState {
 public:
  // One change, enough to undo it and to make it again.
  struct Change {
    enum Kind : uint8_t { kAdd, kGrow, kRoom, kDebt } kind;
    int rank;  // kAdd, kGrow: the home rank; kRoom: the rank
    int expert = 0, piece = 0;
    int bin = 0;                             // kAdd, kGrow: the piece's rank; kRoom: the rank
    int64_t amount = 0;                      // kAdd, kGrow
    int64_t surplus = 0, spare = 0;          // kRoom: the new values
    int64_t old_surplus = 0, old_spare = 0;  // kRoom
    int old_last = -1;                       // kAdd: the home's last piece before
    uint64_t old_stamps[2] = {};             // the stamps of the home's node and the bin's before
    double debt = 0;                         // kDebt
    double old_cost = 0, old_debt = 0;
  };
  // Everything a change touches: the fixed-length arrays (Arrays) in one block, the lists that
  // grow as pieces are added, and two sums.
  struct Values {
    ArrayBlock arrays;
    double cost = 0;
    std::vector<Piece> pieces;
    std::vector<int> next;        // per piece, the home's next piece (-1 ends; see Arrays::first)
    std::vector<Bin> open_other;  // open bins by (room, rank) (two-level topologies only)
    double debt = 0;              // estimated cost of the sheds that this node's handoffs leave to others
  };

  PlacementState() = default;
  // A copy or a move would leave the source's views on arrays it shares or no longer owns;
  // values() and Restore() copy a state.
  PlacementState(const PlacementState&) = delete;
  PlacementState& operator=(const PlacementState&) = delete;

  // Binds the state to one request (the references must outlive every later call); buffers
  // are kept between requests.
  void Bind(const PlanRequest& request, const LoadSums& sums);
  // Every rank's surplus and room at `cap`, every expert whole, no pieces.
  void Reset(int64_t cap) {
    ResetDeferred(cap);
    EndDeferral();
  }
  // Reset, with every bin left out of the sorted index until EndDeferral sorts them all once:
  // for changes made before any query of the index (step 1's resident pieces, each of which
  // would otherwise re-sort its bin).
  void ResetDeferred(int64_t cap);
  const Values& values() const { return v_; }
  void Restore(const Values& values) {
    v_ = values;
    PointInto();
  }
  // Exchanges the state with `values` without copying either.
  void SwapValues(Values& values) {
    std::swap(v_, values);
    PointInto();
  }
  // Gives the lists of `values` that grow during a plan (pieces, the open bins) the room of the
  // bound request's largest, so that values swapped in and out of a state never bring a smaller
  // buffer that the next plan would have to grow.
  void ReserveLists(Values& values) const;

  // The request.
  const Topology& topology() const { return *topology_; }
  // Set on a two-level topology, with its costs in tree_costs().
  bool tree() const { return tree_; }
  const TreeCosts& tree_costs() const { return tree_costs_; }
  int ranks() const { return topology_->ranks(); }
  int experts_per_rank() const { return per_rank_; }
  int experts() const { return ranks() * per_rank_; }
  int slots_per_rank() const { return slots_per_rank_; }
  int home_of(int expert) const { return expert / per_rank_; }
  const std::vector<Replica>& resident() const { return resident_; }  // sorted
  int64_t total_load() const { return sums_->total; }
  int64_t cap() const { return cap_; }  // Reset's

  int64_t surplus(int r) const { return a_.surplus[r]; }
  int64_t spare(int r) const { return a_.spare[r]; }
  int64_t left(int e) const { return a_.left[e]; }
  int slots(int r) const { return a_.slots[r]; }
  double cost() const { return v_.cost; }
  double debt() const { return v_.debt; }
  // Views on the state's own arrays, until the next Bind, Restore or SwapValues.
  std::span<const int64_t> surpluses() const { return a_.surplus; }
  std::span<const int64_t> spares() const { return a_.spare; }
  const std::vector<Piece>& pieces() const { return v_.pieces; }
  // h's pieces: first_piece(h), then next_piece(i), until -1.
  int first_piece(int h) const { return a_.first[h]; }
  int next_piece(int i) const { return v_.next[i]; }
  int last_piece(int h) const { return a_.last[h]; }  // -1 when h has none
  // h's piece of expert e on rank c, which must exist.
  int PieceOf(int h, int e, int c) const {
    int i = a_.first[h];
    while (v_.pieces[i].expert != e || v_.pieces[i].rank != c) i = v_.next[i];
    return i;
  }
  // The i-th expert rank c holds a piece of (i < K - slots(c)).
  int held(int c, int i) const { return a_.held[static_cast<size_t>(c) * slots_per_rank_ + i]; }
  // Open bins by (room, rank); two-level topologies only, and stale for a deferred node.
  const std::vector<Bin>& open_bins() const { return v_.open_other; }
  // The room of the roomiest open bin outside `node` (-1: none), read from open_bins(): `node`'s
  // own entries, stale while it is deferred, are skipped. Two-level topologies only.
  int64_t RoomiestElsewhere(int node) const;
  // The room open_bins() holds bin c under (-1: not there).
  int64_t indexed_room(int c) const { return a_.indexed[c]; }

  // Names the state of a node's ranks (their surplus, room, slots and pieces held, and their
  // experts' tokens left): a change to any of them gives the node a stamp never given before,
  // and a rollback gives it back the stamp it had. Equal stamps of a node mean an equal state
  // for as long as this object lives, so a caller may keep what it derived from a node's state
  // under the node's stamp (ChainCovers::CarryCache), across trials, passes and plans.
  uint64_t node_stamp(int node) const { return a_.node_stamp[static_cast<size_t>(node)]; }

  bool IsOpen(int c) const { return a_.spare[c] > 0 && a_.slots[c] > 0; }
  bool Holds(int e, int c) const {
    const int* held = a_.held.data() + static_cast<size_t>(c) * slots_per_rank_;
    for (int i = 0, n = slots_per_rank_ - a_.slots[c]; i < n; ++i) {
      if (held[i] == e) return true;
    }
    return false;
  }
  bool InScope(int h, int c, Scope scope) const {
    switch (scope) {
      case Scope::kSameNode:
        return topology_->same_node(h, c);
      case Scope::kOtherNodes:
        return !topology_->same_node(h, c);
      case Scope::kAnywhere:
        return true;
    }
    return false;
  }
  bool CanHost(int h, int e, int c, Scope scope) const {
    return c != h && IsOpen(c) && InScope(h, c, scope) && !Holds(e, c);
  }
  double PieceCost(int h, int e, int c) const {
    if (!resident_.empty()) {
      // An expert has few resident replicas, if any: a scan of its run beats a search of all.
      for (int i = resident_start_[e]; i < resident_start_[e + 1]; ++i) {
        if (resident_[i].rank == c) return 0.0;
      }
    }
    if (tree_) return topology_->same_node(h, c) ? tree_costs_.intra : tree_costs_.inter;
    return topology_->cost(h, c);
  }
  // What a new piece across nodes costs unless it reuses a resident replica (then it is free):
  // the inter-node cost on a two-level topology, else 0 (no such floor).
  double CrossNodePieceCost() const { return tree_ ? tree_costs_.inter : 0.0; }
  // How many replicas of h's experts are resident on ranks of other nodes.
  int ResidentAcross(int h) const;
  // The node's surplus less its open ranks' room: what it must still send to other nodes.
  int64_t NodeExcess(int node) const;
  // Whether any of h's experts has a resident replica.
  bool HasResident(int h) const {
    return !resident_.empty() && resident_start_[h * per_rank_] < resident_start_[(h + 1) * per_rank_];
  }
  // Tokens of r's experts not placed yet, all together.
  int64_t TokensLeft(int r) const {
    int64_t sum = 0;
    for (int x = r * per_rank_; x < (r + 1) * per_rank_; ++x) sum += a_.left[x];
    return sum;
  }
  // h's expert with the most tokens left (the lowest among equals), or -1 when none has any.
  int LargestExpert(int h) const {
    int e = h * per_rank_;
    for (int x = e + 1; x < (h + 1) * per_rank_; ++x) {
      if (a_.left[x] > a_.left[e]) e = x;
    }
    return a_.left[e] > 0 ? e : -1;
  }
  // The bin in `scope` for a piece of `want` tokens of h's expert e: the cheapest that takes it
  // whole, the tightest of those; failing that, the roomiest (the biggest piece), the cheapest
  // of those. -1 when no bin can host e.
  int BestFitBin(int h, int e, int64_t want, Scope scope) const;

  // A new piece: `amount` tokens of h's expert e on c, taking one of c's slots.
  void AddPiece(int h, int e, int c, int64_t amount);
  void GrowPiece(int h, int piece, int64_t amount);
  // Sets a rank's surplus and room outright (a carrier or a handoff's receiver).
  void SetRoom(int r, int64_t surplus, int64_t spare);
  void AddDebt(double debt);
  void ClearDebt() { v_.debt = 0; }

  // Bins of `node` leave the sorted index alone until EndDeferral.
  void DeferNode(int node) { deferred_node_ = node; }
  void EndDeferral();

  void set_logging(bool on) { logging_ = on; }
  void ClearLog() { log_.clear(); }
  // The changes made while logging, oldest first.
  const std::vector<Change>& log() const { return log_; }
  // Undoes the logged changes after the first `mark`, appending them (in order) to `redo`
  // when given.
  void Rollback(size_t mark, std::vector<Change>* redo);
  void Redo(const std::vector<Change>& changes);

 private:
  int BestFitOtherNodes(int h, int e, int64_t want) const;
  // Keeps `change` in the log while logging. Inline, so that with logging off the change is
  // never built (1.2-2.2% of a plan's instructions).
  void Log(Change& change) {
    if (!logging_) return;
    change.old_cost = v_.cost;
    change.old_debt = v_.debt;
    log_.push_back(change);
  }
  // Records in `change` the stamps of the nodes of `h` and `c`, then gives both a new one.
  void Stamp(int h, int c, Change& change) {
    uint64_t& home = a_.node_stamp[static_cast<size_t>(topology_->node_of(h))];
    uint64_t& bin = a_.node_stamp[static_cast<size_t>(topology_->node_of(c))];
    change.old_stamps[0] = home;
    change.old_stamps[1] = bin;
    home = bin = ++last_stamp_;
  }
  // Moves `amount` tokens of e from h to c and takes `slots` slots of c.
  void Shift(int h, int e, int c, int64_t amount, int slots);
  void ReindexUnlessDeferred(int c) {
    if (indexing_ && topology_->node_of(c) != deferred_node_) Reindex(c);
  }
  // Puts bin c where its room says in open_other (or takes it out once closed). Inline as far
  // as the test that it moved: most bins a node's cover re-indexes have not.
  void Reindex(int c) {
    const int64_t want = IsOpen(c) ? a_.spare[c] : -1;
    if (want != a_.indexed[c]) MoveInIndex(c, want);
  }
  // Moves bin c in open_other from room indexed[c] to room `want` (-1: not there).
  void MoveInIndex(int c, int64_t want);
  // Sorts every open bin into open_other, and starts keeping it sorted (EndDeferral of all).
  void IndexAllBins();

  // The arrays of Values::arrays, where Bind lays them out for the request's sizes.
  struct Arrays {
    std::span<int64_t> surplus, spare;  // per rank
    std::span<int64_t> indexed;         // per bin, the room open_other has it under (-1: absent)
    std::span<int64_t> left;            // per expert
    std::span<uint64_t> node_stamp;     // per node, see node_stamp()
    std::span<int> slots;               // per rank
    // Pieces of each home rank in order, as a list: first[h], then Values::next[piece].
    std::span<int> first, last;
    std::span<int> held;  // per rank, the experts of its pieces (K entries)
  };
  struct Slice {
    size_t offset = 0, count = 0;
    bool operator==(const Slice&) const = default;
  };
  struct Layout {
    Slice surplus, spare, indexed, left, node_stamp, slots, first, last, held;
    size_t bytes = 0;
    bool operator==(const Layout&) const = default;
  };
  // Points a_ at v_'s arrays: after anything that gives v_ another block (Bind, Restore,
  // SwapValues); the spans surpluses() and spares() gave end there too.
  void PointInto() {
    ArrayBlock& b = v_.arrays;
    const Layout& l = layout_;
    a_.surplus = b.Array<int64_t>(l.surplus.offset, l.surplus.count);
    a_.spare = b.Array<int64_t>(l.spare.offset, l.spare.count);
    a_.indexed = b.Array<int64_t>(l.indexed.offset, l.indexed.count);
    a_.left = b.Array<int64_t>(l.left.offset, l.left.count);
    a_.node_stamp = b.Array<uint64_t>(l.node_stamp.offset, l.node_stamp.count);
    a_.slots = b.Array<int>(l.slots.offset, l.slots.count);
    a_.first = b.Array<int>(l.first.offset, l.first.count);
    a_.last = b.Array<int>(l.last.offset, l.last.count);
    a_.held = b.Array<int>(l.held.offset, l.held.count);
  }

  const Topology* topology_ = nullptr;
  const LoadSums* sums_ = nullptr;
  int per_rank_ = 0;
  int slots_per_rank_ = 0;
  bool tree_ = false;
  TreeCosts tree_costs_;
  std::vector<Replica> resident_;
  std::vector<int> resident_start_;  // expert e's resident replicas: resident_[start[e], start[e + 1])
  Values v_;
  Layout layout_{};
  Arrays a_;
  std::vector<Change> log_;
  bool logging_ = false;
  uint64_t last_stamp_ = 0;             // the last stamp given, never reused
  static constexpr int kAllNodes = -2;  // deferred_node_ after ResetDeferred
  int deferred_node_ = -1;
  bool indexing_ = false;  // on a two-level topology, but for between ResetDeferred and EndDeferral
  int64_t cap_ = 0;
};

}  // namespace taot::planners

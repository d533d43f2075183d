// Removing redundant replicas: pieces that form a cycle through ranks can trade tokens around it
// with every rank's load unchanged, until one of them carries nothing and goes.
#pragma once

#include <cstdint>
#include <vector>

#include "planners/plan_building.h"
#include "taot/planner/plan_request.h"

namespace taot::planners {

// Pieces are edges between a home rank and a guest rank. For every cycle of such edges there is
// an alternation of +δ and -δ along it that leaves every rank's load where it was (when the
// cycle's directions allow one); pushing δ until the smallest shrinking piece is empty removes
// it, and its weight transfer, for free. Repeats while a cycle removes something, each time the
// most expensive piece it can; never lets an expert send more tokens than it has.
// Deterministic. Keeps its buffers between calls.
class CycleCanceller {
 public:
  // `resident` must be sorted: a resident replica costs nothing to keep.
  void Cancel(const PlanRequest& request, const std::vector<int64_t>& expert_totals,
              const std::vector<Replica>& resident, std::vector<GuestShare>& pieces);

 private:
  int Find(int rank);
  // Whether the pieces, as edges between home and guest ranks, close a cycle: where none does,
  // there is nothing to cancel, and the costs, the order and the forest's paths go unweighed
  // (5.6% of a plan on the simulator's EP128 requests, whose pieces close none).
  bool HasCycle(const PlanRequest& request, const std::vector<GuestShare>& pieces);
  // Joins ranks a and b in the forest by piece p.
  void Link(int a, int b, int p);
  // One direction of a link in the forest.
  struct Edge {
    int next;  // the rank's next edge (-1 ends)
    int to;
    int piece;
  };
  // The pieces of the forest path from rank `from` to rank `to`, in order.
  bool Path(int from, int to, std::vector<int>& path);
  // Tries the cycle closed by piece `closing`; true when it removed a piece.
  bool TryCycle(int closing, std::vector<GuestShare>& pieces);

  const PlanRequest* request_ = nullptr;
  std::vector<int> parent_;  // union-find over ranks
  // The forest's edges, each rank's as a list (first_edge_[rank], then Edge::next): one array
  // for all ranks, so that a first plan does not allocate one list per rank.
  std::vector<int> first_edge_;
  std::vector<Edge> edges_;
  std::vector<int> via_, queue_, cycle_, sign_, order_;
  std::vector<int64_t> left_;
  std::vector<int> net_;      // per expert, TryCycle's scratch: 0 between calls
  std::vector<double> cost_;  // per piece
};

}  // namespace taot::planners

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
  // The pieces of the forest path from rank `from` to rank `to`, in order.
  bool Path(int from, int to, std::vector<int>& path);
  // Tries the cycle closed by piece `closing`; true when it removed a piece.
  bool TryCycle(int closing, std::vector<GuestShare>& pieces);

  const PlanRequest* request_ = nullptr;
  std::vector<int> parent_;                            // union-find over ranks
  std::vector<std::vector<std::pair<int, int>>> adj_;  // forest: (rank, piece) per rank
  std::vector<int> via_, queue_, cycle_, sign_, order_;
  std::vector<int64_t> left_;
  std::vector<double> cost_;  // per piece
};

}  // namespace taot::planners

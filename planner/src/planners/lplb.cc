// LPLB (DeepSeek), re-implemented from its description (github.com/deepseek-ai/LPLB's README): replicas sit on the
// edges of a fixed graph (each replica is an edge original -> copy; at most 2 copies of an
// expert), and every batch an LP that minimises the maximum GPU load decides how each
// replicated expert's tokens are split between its two copies.
//
// Our reading:
// - the graph: a 3-cube over the (up to) 8 GPUs of a node (local index i links to i^1, i^2,
//   i^4) and a 2-D torus over nodes (a rows x cols grid, rows the largest divisor of the node
//   count up to its square root; GPU i of a node links to GPU i of the node's torus
//   neighbours). The torus is used from 4 nodes on; below that the graph is the cube alone.
// - slot j of rank r serves its j-th edge, in the order cube dim 0, torus east, cube dim 1,
//   torus south, cube dim 2, torus west, torus north; it hosts the heaviest not yet replicated
//   expert of the rank at the other end. Every slot is filled each batch, so the replicas cost
//   the same every time (as in the paper's Table 1).
// - the LP: min L such that the replicated experts' tokens fit under L on every rank. We solve
//   it exactly, in whole tokens, with a parametric max flow (min_max_split.h; the LP's optimum
//   rounded up to a whole token), instead of LPLB's small interior-point solver.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "planners/builtin.h"
#include "planners/min_max_split.h"
#include "planners/params.h"
#include "planners/plan_building.h"
#include "planners/summing_planner.h"

namespace taot::planners {
namespace {

int TorusRows(int nodes) {
  int rows = 1;
  for (int a = 1; a * a <= nodes; ++a) {
    if (nodes % a == 0) rows = a;
  }
  return rows;
}

// The graph neighbours of `rank`, in slot order (see the file comment).
std::vector<int> Neighbours(const Topology& topo, int rank) {
  const int node = topo.node_of(rank);
  std::span<const int> local = topo.ranks_of_node(node);
  const int index = static_cast<int>(std::find(local.begin(), local.end(), rank) - local.begin());
  auto cube = [&](int dim) {
    const int other = index ^ (1 << dim);
    return other < static_cast<int>(local.size()) ? local[other] : -1;
  };
  const int nodes = topo.nodes();
  const int rows = TorusRows(nodes);
  const int cols = nodes / rows;
  const int x = node % cols;
  const int y = node / cols;
  auto torus = [&](int dx, int dy) {
    if (nodes < 4) return -1;
    const int other_node = ((y + dy + rows) % rows) * cols + (x + dx + cols) % cols;
    if (other_node == node) return -1;
    std::span<const int> there = topo.ranks_of_node(other_node);
    return index < static_cast<int>(there.size()) ? there[index] : -1;
  };
  std::vector<int> out;
  for (int n : {cube(0), torus(1, 0), cube(1), torus(0, 1), cube(2), torus(-1, 0), torus(0, -1)}) {
    if (n >= 0 && std::find(out.begin(), out.end(), n) == out.end()) out.push_back(n);
  }
  return out;
}

// Fills every slot along the graph with the heaviest unreplicated expert of its neighbour.
std::vector<Replica> PlaceAlongGraph(const PlanRequest& request, const LoadSums& sums) {
  std::vector<char> replicated(static_cast<size_t>(request.experts()), 0);
  std::vector<Replica> replicas;
  const int per_rank = request.experts_per_rank();
  for (int r = 0; r < request.ranks(); ++r) {
    const std::vector<int> neighbours = Neighbours(request.topology(), r);
    const int slots = std::min<int>(request.slots_per_rank(), static_cast<int>(neighbours.size()));
    for (int j = 0; j < slots; ++j) {
      const int n = neighbours[j];
      int best = -1;
      for (int e = n * per_rank; e < (n + 1) * per_rank; ++e) {
        if (!replicated[e] && (best < 0 || sums.expert_totals[e] > sums.expert_totals[best])) {
          best = e;
        }
      }
      if (best < 0) continue;
      replicated[best] = 1;
      replicas.push_back({best, r});
    }
  }
  return replicas;
}

class LplbPlanner final : public SummingPlanner {
 public:
  std::string_view name() const override { return "lplb"; }

 private:
  absl::StatusOr<Plan> PlanFromSums(const PlanRequest& request, const LoadSums& sums) override {
    Plan plan;
    AppendSlicedShares(request, split_.Shares(request, sums, PlaceAlongGraph(request, sums)), plan);
    return plan;
  }

  MinMaxSplitter split_;
};

}  // namespace

PlannerOr MakeLplb(const PlannerParams& params) {
  ParamReader reader("lplb", params);
  if (absl::Status s = reader.Finish(); !s.ok()) return s;
  return std::make_unique<LplbPlanner>();
}

}  // namespace taot::planners

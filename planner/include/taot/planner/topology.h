// The cluster as the planner sees it: ranks grouped into nodes, and the cost of moving one
// expert's weights from one rank to another.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"

namespace taot {

// The default two-level cost: 0 on the same rank, kIntraNodeCost inside a node (NVLink),
// an inter-node cost λ across nodes (InfiniBand).
inline constexpr int kDefaultRanksPerNode = 8;
inline constexpr double kIntraNodeCost = 1.0;
inline constexpr double kDefaultInterNodeCost = 3.0;

// Costs of a two-level tree metric: every pair inside a node costs `intra`, every pair across
// nodes costs `inter`, with 0 <= intra <= inter. Exact transport on such a metric needs no LP.
struct TreeCosts {
  double intra = kIntraNodeCost;
  double inter = kDefaultInterNodeCost;
};

// Immutable after construction; every factory validates its input and names the bad field.
class Topology {
 public:
  // An empty topology (0 ranks); ValidateRequest rejects it.
  Topology() = default;
  // `ranks` ranks, rank r on node r / ranks_per_node; costs 0 / 1 / inter_node_cost.
  static absl::StatusOr<Topology> Uniform(int ranks, int ranks_per_node = kDefaultRanksPerNode,
                                          double inter_node_cost = kDefaultInterNodeCost);
  // Explicit node of each rank (any non-negative labels; renumbered densely in label order);
  // costs 0 / 1 / inter_node_cost.
  static absl::StatusOr<Topology> FromNodes(std::vector<int> node_of_rank,
                                            double inter_node_cost = kDefaultInterNodeCost);
  // A full R x R cost matrix (row-major, cost[from * R + to]): square, finite, non-negative,
  // zero diagonal; it may be asymmetric (symmetric() says which). node_of_rank still decides
  // what counts as intra- or inter-node in the scorecard.
  static absl::StatusOr<Topology> FromMatrix(std::vector<int> node_of_rank, std::vector<double> cost);

  int ranks() const { return static_cast<int>(node_of_rank_.size()); }
  int nodes() const { return nodes_; }
  int node_of(int rank) const { return node_of_rank_[rank]; }
  bool same_node(int a, int b) const { return node_of_rank_[a] == node_of_rank_[b]; }
  const std::vector<int>& node_of_rank() const { return node_of_rank_; }
  // Ranks of node n in increasing order.
  std::span<const int> ranks_of_node(int n) const {
    return std::span<const int>(ranks_by_node_).subspan(node_start_[n], node_start_[n + 1] - node_start_[n]);
  }
  // 0, 1, ..., ranks() - 1.
  std::span<const int> all_ranks() const { return all_ranks_; }

  // Cost of moving one expert's weights from rank `from` to rank `to`.
  double cost(int from, int to) const { return cost_[static_cast<size_t>(from) * ranks() + to]; }
  bool symmetric() const { return symmetric_; }
  // Set when the costs form a two-level tree metric (always for Uniform and FromNodes; for a
  // matrix when it happens to be one), which lets solvers use the exact direct algorithms.
  const std::optional<TreeCosts>& tree_costs() const { return tree_costs_; }
  // Whether the topology was given as a full matrix (kept so it can be written back as given).
  bool has_matrix() const { return from_matrix_; }

 private:
  void Finish();

  // Flat arrays only (a device planner reads them as they are): the ranks of node n are
  // ranks_by_node_[node_start_[n], node_start_[n + 1]); the costs are row-major R x R.
  std::vector<int> node_of_rank_;
  std::vector<int> ranks_by_node_;
  std::vector<int> node_start_;
  std::vector<int> all_ranks_;
  std::vector<double> cost_;
  int nodes_ = 0;
  bool symmetric_ = true;
  bool from_matrix_ = false;
  std::optional<TreeCosts> tree_costs_;
};

// Each rank's node id from each rank's node label (a host name, a hash of one): ranks with
// equal labels share a node, and nodes are numbered 0, 1, ... in order of their lowest rank, so
// every rank that sees the same labels numbers the nodes the same way.
template <typename Label>
std::vector<int> NodeIdsByLowestRank(std::span<const Label> label_of_rank) {
  std::map<Label, int> ids;
  std::vector<int> node_of_rank;
  node_of_rank.reserve(label_of_rank.size());
  for (const Label& label : label_of_rank) {
    node_of_rank.push_back(ids.emplace(label, static_cast<int>(ids.size())).first->second);
  }
  return node_of_rank;
}

}  // namespace taot

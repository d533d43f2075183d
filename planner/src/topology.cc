#include "taot/planner/topology.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"

namespace taot {
namespace {

absl::Status CheckInterNodeCost(double inter_node_cost) {
  if (!std::isfinite(inter_node_cost) || inter_node_cost < kIntraNodeCost) {
    return absl::InvalidArgumentError(absl::StrCat("topology.inter_node_cost: must be a finite number >= ",
                                                   kIntraNodeCost, " (the intra-node cost), got ", inter_node_cost));
  }
  return absl::OkStatus();
}

// Renumbers node labels densely in increasing label order, so that {5, 5, 9, 9} and {0, 0, 1, 1}
// describe the same topology.
absl::Status DenseNodes(std::vector<int>& node_of_rank) {
  if (node_of_rank.empty()) {
    return absl::InvalidArgumentError("topology.node_of_rank: must name at least one rank");
  }
  for (size_t r = 0; r < node_of_rank.size(); ++r) {
    if (node_of_rank[r] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("topology.node_of_rank[", r, "]: must be >= 0, got ", node_of_rank[r]));
    }
  }
  std::vector<int> labels = node_of_rank;
  std::sort(labels.begin(), labels.end());
  labels.erase(std::unique(labels.begin(), labels.end()), labels.end());
  for (int& node : node_of_rank) {
    node = static_cast<int>(std::lower_bound(labels.begin(), labels.end(), node) - labels.begin());
  }
  return absl::OkStatus();
}

std::optional<TreeCosts> DetectTreeCosts(const Topology& t) {
  std::optional<double> intra, inter;
  for (int a = 0; a < t.ranks(); ++a) {
    for (int b = 0; b < t.ranks(); ++b) {
      if (a == b) continue;
      std::optional<double>& seen = t.same_node(a, b) ? intra : inter;
      if (!seen) seen = t.cost(a, b);
      if (*seen != t.cost(a, b)) return std::nullopt;
    }
  }
  TreeCosts costs;
  costs.intra = intra.value_or(inter.value_or(kIntraNodeCost));
  costs.inter = inter.value_or(costs.intra);
  if (costs.intra > costs.inter) return std::nullopt;
  return costs;
}

}  // namespace

absl::StatusOr<Topology> Topology::Uniform(int ranks, int ranks_per_node, double inter_node_cost) {
  if (ranks <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("topology.ranks: must be a positive integer, got ", ranks));
  }
  if (ranks_per_node <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("topology.ranks_per_node: must be a positive integer, got ", ranks_per_node));
  }
  std::vector<int> node_of_rank(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) node_of_rank[r] = r / ranks_per_node;
  return FromNodes(std::move(node_of_rank), inter_node_cost);
}

absl::StatusOr<Topology> Topology::FromNodes(std::vector<int> node_of_rank, double inter_node_cost) {
  if (absl::Status s = CheckInterNodeCost(inter_node_cost); !s.ok()) return s;
  if (absl::Status s = DenseNodes(node_of_rank); !s.ok()) return s;
  Topology t;
  t.node_of_rank_ = std::move(node_of_rank);
  const int R = t.ranks();
  t.cost_.assign(static_cast<size_t>(R) * R, 0.0);
  for (int a = 0; a < R; ++a) {
    for (int b = 0; b < R; ++b) {
      if (a == b) continue;
      t.cost_[static_cast<size_t>(a) * R + b] =
          t.node_of_rank_[a] == t.node_of_rank_[b] ? kIntraNodeCost : inter_node_cost;
    }
  }
  t.Finish();
  return t;
}

absl::StatusOr<Topology> Topology::FromMatrix(std::vector<int> node_of_rank, std::vector<double> cost) {
  if (absl::Status s = DenseNodes(node_of_rank); !s.ok()) return s;
  const size_t R = node_of_rank.size();
  if (cost.size() != R * R) {
    return absl::InvalidArgumentError(absl::StrCat("topology.cost_matrix: must be ", R, " x ", R,
                                                   " (one row and column per rank), got ", cost.size(), " entries"));
  }
  for (size_t a = 0; a < R; ++a) {
    for (size_t b = 0; b < R; ++b) {
      const double c = cost[a * R + b];
      const std::string where = absl::StrCat("topology.cost_matrix[", a, "][", b, "]: ");
      if (!std::isfinite(c) || c < 0) {
        return absl::InvalidArgumentError(absl::StrCat(where, "must be a finite number >= 0, got ", c));
      }
      if (a == b && c != 0) {
        return absl::InvalidArgumentError(absl::StrCat(where, "the diagonal must be 0 (no move), got ", c));
      }
    }
  }
  Topology t;
  t.node_of_rank_ = std::move(node_of_rank);
  t.cost_ = std::move(cost);
  t.from_matrix_ = true;
  t.Finish();
  return t;
}

void Topology::Finish() {
  const int R = ranks();
  nodes_ = 0;
  for (int node : node_of_rank_) nodes_ = std::max(nodes_, node + 1);
  // Counting sort of the ranks by node: stable, so each node's ranks stay in increasing order.
  node_start_.assign(static_cast<size_t>(nodes_) + 1, 0);
  for (int node : node_of_rank_) ++node_start_[node + 1];
  for (int n = 0; n < nodes_; ++n) node_start_[n + 1] += node_start_[n];
  ranks_by_node_.resize(static_cast<size_t>(R));
  std::vector<int> next(node_start_.begin(), node_start_.end() - 1);
  for (int r = 0; r < R; ++r) ranks_by_node_[next[node_of_rank_[r]]++] = r;
  all_ranks_.resize(static_cast<size_t>(R));
  for (int r = 0; r < R; ++r) all_ranks_[r] = r;
  symmetric_ = true;
  for (int a = 0; a < R && symmetric_; ++a) {
    for (int b = a + 1; b < R; ++b) {
      if (cost(a, b) != cost(b, a)) {
        symmetric_ = false;
        break;
      }
    }
  }
  tree_costs_ = DetectTreeCosts(*this);
}

}  // namespace taot

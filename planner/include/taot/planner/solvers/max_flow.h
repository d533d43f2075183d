// Maximum flow with integer capacities (Dinic's algorithm). An instance keeps its memory between
// networks (Reset), so a caller that solves one network per layer allocates only on its first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace taot {

class MaxFlow {
 public:
  explicit MaxFlow(int nodes = 0);
  // Forgets every edge and the flow: an empty network of `nodes` nodes, as if newly constructed.
  void Reset(int nodes);
  // Adds a directed edge and returns its id (for flow()).
  int AddEdge(int from, int to, int64_t capacity);
  // Augments the current flow to a maximum one from source to sink and returns what this call
  // added; after AddCapacity, call again to continue from where it stopped.
  int64_t Solve(int source, int sink);
  int64_t flow(int edge) const;
  // Raises an edge's capacity by `extra` >= 0, keeping the flow.
  void AddCapacity(int edge, int64_t extra);
  // After Solve: whether `node` is on the source side of a minimum cut (reachable from the
  // source in the residual graph).
  bool OnSourceSide(int node) const { return level_[node] >= 0; }

 private:
  struct Edge {
    int to;
    int64_t capacity;
  };
  bool Levels(int source, int sink);
  int64_t Push(int node, int sink, int64_t limit);

  std::vector<Edge> edges_;  // edge 2k is forward, 2k+1 its residual twin
  std::vector<int64_t> original_;
  std::vector<std::vector<int>> out_;
  std::vector<int> level_;
  std::vector<size_t> next_;
  std::vector<int> queue_;  // Levels' breadth-first queue
};

}  // namespace taot

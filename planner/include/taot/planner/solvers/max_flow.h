// Maximum flow with integer capacities (Dinic's algorithm).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace taot {

class MaxFlow {
 public:
  explicit MaxFlow(int nodes);
  // Adds a directed edge and returns its id (for flow()).
  int AddEdge(int from, int to, int64_t capacity);
  // Maximum flow from source to sink; may be called once per graph.
  int64_t Solve(int source, int sink);
  int64_t flow(int edge) const;

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
};

}  // namespace taot

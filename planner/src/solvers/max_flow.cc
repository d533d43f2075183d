#include "taot/planner/solvers/max_flow.h"

#include <algorithm>
#include <limits>

namespace taot {

MaxFlow::MaxFlow(int nodes) : out_(static_cast<size_t>(nodes)) {}

void MaxFlow::Reset(int nodes) {
  edges_.clear();
  original_.clear();
  out_.resize(static_cast<size_t>(nodes));
  for (std::vector<int>& out : out_) out.clear();
}

int MaxFlow::AddEdge(int from, int to, int64_t capacity) {
  const int id = static_cast<int>(edges_.size());
  edges_.push_back({to, capacity});
  edges_.push_back({from, 0});
  original_.push_back(capacity);
  out_[from].push_back(id);
  out_[to].push_back(id + 1);
  return id / 2;
}

int64_t MaxFlow::flow(int edge) const { return original_[edge] - edges_[static_cast<size_t>(edge) * 2].capacity; }

void MaxFlow::AddCapacity(int edge, int64_t extra) {
  edges_[static_cast<size_t>(edge) * 2].capacity += extra;
  original_[edge] += extra;
}

bool MaxFlow::Levels(int source, int sink) {
  level_.assign(out_.size(), -1);
  queue_.clear();
  level_[source] = 0;
  queue_.push_back(source);
  for (size_t head = 0; head < queue_.size(); ++head) {
    const int u = queue_[head];
    for (int id : out_[u]) {
      const Edge& e = edges_[id];
      if (e.capacity > 0 && level_[e.to] < 0) {
        level_[e.to] = level_[u] + 1;
        queue_.push_back(e.to);
      }
    }
  }
  return level_[sink] >= 0;
}

// Pushes as many paths from `node` as `limit` and the level graph allow before returning, each
// arc in turn (an arc is left only once it or what lies past it is blocked). The paths and
// their amounts are those of pushing one path per descent from the source, in the same order,
// without walking down the same arcs again for every path: the split's network has a path per
// (expert, rank) share, and re-descending was most of the predictive split's flow time.
int64_t MaxFlow::Push(int node, int sink, int64_t limit) {
  if (node == sink) return limit;
  int64_t total = 0;
  for (size_t& k = next_[node]; k < out_[node].size(); ++k) {
    const int id = out_[node][k];
    Edge& e = edges_[id];
    if (e.capacity <= 0 || level_[e.to] != level_[node] + 1) continue;
    const int64_t pushed = Push(e.to, sink, std::min(limit - total, e.capacity));
    if (pushed > 0) {
      e.capacity -= pushed;
      edges_[id ^ 1].capacity += pushed;
      total += pushed;
      if (total == limit) return total;  // the arc may take more: the next push starts at it
    }
  }
  return total;
}

int64_t MaxFlow::Solve(int source, int sink) {
  int64_t total = 0;
  while (Levels(source, sink)) {
    next_.assign(out_.size(), 0);
    while (int64_t pushed = Push(source, sink, std::numeric_limits<int64_t>::max())) {
      total += pushed;
    }
  }
  return total;
}

}  // namespace taot

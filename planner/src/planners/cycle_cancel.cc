#include "planners/cycle_cancel.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <utility>

namespace taot::planners {

namespace {

// The root of `rank` in the union-find forest `parent`, halving the path on the way.
int Root(int* parent, int rank) {
  while (parent[rank] != rank) rank = parent[rank] = parent[parent[rank]];
  return rank;
}

}  // namespace

int CycleCanceller::Find(int rank) { return Root(parent_.data(), rank); }

void CycleCanceller::Link(int a, int b, int p) {
  edges_.push_back({first_edge_[a], b, p});
  first_edge_[a] = static_cast<int>(edges_.size()) - 1;
  edges_.push_back({first_edge_[b], a, p});
  first_edge_[b] = static_cast<int>(edges_.size()) - 1;
}

bool CycleCanceller::Path(int from, int to, std::vector<int>& path) {
  // Breadth-first over the forest from `from`; via_[v] is the piece that reached v. (A forest
  // has one path between two ranks, so the order edges are visited in does not matter.)
  std::fill(via_.begin(), via_.end(), -2);
  queue_.assign(1, from);
  via_[from] = -1;
  for (size_t q = 0; q < queue_.size() && via_[to] == -2; ++q) {
    for (int i = first_edge_[queue_[q]]; i >= 0; i = edges_[i].next) {
      const Edge& edge = edges_[i];
      if (via_[edge.to] != -2) continue;
      via_[edge.to] = edge.piece;
      queue_.push_back(edge.to);
    }
  }
  if (via_[to] == -2) return false;
  path.clear();
  for (int v = to; v != from;) {
    const int p = via_[v];
    path.push_back(p);
    for (int i = first_edge_[v]; i >= 0; i = edges_[i].next) {
      if (edges_[i].piece == p) {
        v = edges_[i].to;
        break;
      }
    }
  }
  return true;
}

bool CycleCanceller::TryCycle(int closing, std::vector<GuestShare>& pieces) {
  const PlanRequest& request = *request_;
  auto home = [&](int p) { return request.home_of(pieces[p].expert); };
  // The cycle: the closing piece from its guest v0 to its home v1, then the forest path back.
  if (!Path(pieces[closing].rank, home(closing), cycle_)) return false;
  cycle_.insert(cycle_.begin(), closing);
  const size_t n = cycle_.size();
  // Signs that keep every rank's load: at a rank between two pieces, tokens leaving through
  // both (or arriving through both) need opposite signs, one leaving and one arriving the same.
  sign_.assign(n, 0);
  sign_[0] = 1;
  int at = home(closing);
  for (size_t i = 1; i <= n; ++i) {
    const int prev = cycle_[i - 1], next = cycle_[i % n];
    const int prev_dir = at == pieces[prev].rank ? 1 : -1;
    const int next_dir = at == pieces[next].rank ? 1 : -1;
    const int s = -sign_[i - 1] * prev_dir * next_dir;
    if (i == n) {
      if (s != sign_[0]) return false;  // no load-neutral shift around this cycle
      break;
    }
    sign_[i] = s;
    at = at == home(next) ? pieces[next].rank : home(next);
  }
  // Each expert's pieces' signs summed: what its pieces grow by, per δ, on net.
  net_.resize(left_.size());
  for (size_t i = 0; i < n; ++i) net_[pieces[cycle_[i]].expert] += sign_[i];
  int best_orientation = 0;
  int64_t best_delta = 0;
  double best_gain = 0;
  for (int orientation : {1, -1}) {
    int64_t delta = std::numeric_limits<int64_t>::max();
    for (size_t i = 0; i < n; ++i) {
      if (sign_[i] * orientation < 0) delta = std::min(delta, pieces[cycle_[i]].tokens);
    }
    // An expert whose pieces grow on net must have the tokens.
    for (size_t i = 0; i < n; ++i) {
      const int e = pieces[cycle_[i]].expert;
      const int net = net_[e] * orientation;
      if (net > 0) delta = std::min(delta, left_[e] / net);
    }
    if (delta <= 0) continue;
    double gain = 0;
    for (size_t i = 0; i < n; ++i) {
      if (sign_[i] * orientation < 0 && pieces[cycle_[i]].tokens == delta) gain += cost_[cycle_[i]];
    }
    if (gain > best_gain) {
      best_gain = gain;
      best_delta = delta;
      best_orientation = orientation;
    }
  }
  for (size_t i = 0; i < n; ++i) net_[pieces[cycle_[i]].expert] = 0;
  if (best_orientation == 0) return false;
  for (size_t i = 0; i < n; ++i) {
    GuestShare& p = pieces[cycle_[i]];
    const int64_t change = sign_[i] * best_orientation * best_delta;
    p.tokens += change;
    left_[p.expert] -= change;
  }
  pieces.erase(std::remove_if(pieces.begin(), pieces.end(), [](const GuestShare& p) { return p.tokens == 0; }),
               pieces.end());
  return true;
}

bool CycleCanceller::HasCycle(const PlanRequest& request, const std::vector<GuestShare>& pieces) {
  parent_.resize(static_cast<size_t>(request.ranks()));
  std::iota(parent_.begin(), parent_.end(), 0);
  int* const parent = parent_.data();
  const int per_rank = request.experts_per_rank();
  for (const GuestShare& p : pieces) {
    const int a = Root(parent, p.expert / per_rank), b = Root(parent, p.rank);
    if (a == b) return true;
    parent[a] = b;
  }
  return false;
}

void CycleCanceller::Cancel(const PlanRequest& request, const std::vector<int64_t>& expert_totals,
                            const std::vector<Replica>& resident, std::vector<GuestShare>& pieces) {
  if (!HasCycle(request, pieces)) return;
  request_ = &request;
  const int R = request.ranks();
  left_ = expert_totals;
  for (const GuestShare& p : pieces) left_[p.expert] -= p.tokens;
  via_.resize(static_cast<size_t>(R));
  queue_.reserve(static_cast<size_t>(R));
  edges_.reserve(2 * pieces.size());  // a forest over the pieces: two directions of each
  for (bool removed = true; removed;) {
    removed = false;
    cost_.resize(pieces.size());
    for (size_t i = 0; i < pieces.size(); ++i) {
      const GuestShare& p = pieces[i];
      const bool kept = std::binary_search(resident.begin(), resident.end(),
                                           Replica{static_cast<int32_t>(p.expert), static_cast<int32_t>(p.rank)});
      cost_[i] = kept ? 0.0 : request.topology().cost(request.home_of(p.expert), p.rank);
    }
    // Cheap pieces join the forest first, so each cycle is closed by the dearest piece on it.
    order_.resize(pieces.size());
    std::iota(order_.begin(), order_.end(), 0);
    // The lower piece among equals (as a stable sort would, without its buffer).
    std::sort(order_.begin(), order_.end(),
              [&](int a, int b) { return std::make_pair(cost_[a], a) < std::make_pair(cost_[b], b); });
    parent_.resize(static_cast<size_t>(R));
    std::iota(parent_.begin(), parent_.end(), 0);
    first_edge_.assign(static_cast<size_t>(R), -1);
    edges_.clear();
    for (int p : order_) {
      const int a = request.home_of(pieces[p].expert), b = pieces[p].rank;
      const int ra = Find(a), rb = Find(b);
      if (ra == rb) {
        if (TryCycle(p, pieces)) {
          removed = true;
          break;
        }
        continue;  // a cycle that removes nothing: leave the piece out of the forest
      }
      parent_[ra] = rb;
      Link(a, b, p);
    }
  }
}

}  // namespace taot::planners

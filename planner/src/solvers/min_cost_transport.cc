#include "taot/planner/solvers/min_cost_transport.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace taot {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Residual network of a transport problem. Node ids: 0 = super source, 1..m = supplies,
// m+1..m+n = demands, m+n+1 = super sink. Forward supply->demand edges are uncapacitated;
// the reverse edge exists while flow[i][j] > 0.
class TransportNetwork {
 public:
  TransportNetwork(std::span<const int64_t> supply, std::span<const int64_t> demand, std::span<const double> cost)
      : m_(static_cast<int>(supply.size())),
        n_(static_cast<int>(demand.size())),
        supply_(supply.begin(), supply.end()),
        demand_(demand.begin(), demand.end()),
        cost_(cost),
        flow_(static_cast<size_t>(m_) * n_, 0),
        potential_(static_cast<size_t>(m_ + n_ + 2), 0.0) {}

  // One cheapest augmenting path; false when supply or demand is exhausted.
  bool Augment(TransportPlan& out);
  void Emit(TransportPlan& out) const;

 private:
  int source() const { return 0; }
  int sink() const { return m_ + n_ + 1; }
  int supply_node(int i) const { return 1 + i; }
  int demand_node(int j) const { return 1 + m_ + j; }
  double c(int i, int j) const { return cost_[static_cast<size_t>(i) * n_ + j]; }
  int64_t& flow(int i, int j) { return flow_[static_cast<size_t>(i) * n_ + j]; }
  // Reduced cost of a residual edge u->v of cost w; clamped at 0 against rounding.
  double Reduced(int u, int v, double w) const { return std::max(0.0, w + potential_[u] - potential_[v]); }
  void ShortestPaths(std::vector<double>& dist, std::vector<int>& parent);

  int m_, n_;
  std::vector<int64_t> supply_, demand_;
  std::span<const double> cost_;
  std::vector<int64_t> flow_;
  std::vector<double> potential_;
};

void TransportNetwork::ShortestPaths(std::vector<double>& dist, std::vector<int>& parent) {
  const int V = m_ + n_ + 2;
  dist.assign(static_cast<size_t>(V), kInf);
  parent.assign(static_cast<size_t>(V), -1);
  std::vector<char> done(static_cast<size_t>(V), 0);
  dist[source()] = 0;
  for (int round = 0; round < V; ++round) {
    int u = -1;
    for (int v = 0; v < V; ++v) {
      if (!done[v] && dist[v] < kInf && (u < 0 || dist[v] < dist[u])) u = v;
    }
    if (u < 0) break;
    done[u] = 1;
    auto relax = [&](int v, double w) {
      const double d = dist[u] + Reduced(u, v, w);
      if (d < dist[v]) {
        dist[v] = d;
        parent[v] = u;
      }
    };
    if (u == source()) {
      for (int i = 0; i < m_; ++i) {
        if (supply_[i] > 0) relax(supply_node(i), 0);
      }
    } else if (u <= m_) {
      const int i = u - 1;
      for (int j = 0; j < n_; ++j) relax(demand_node(j), c(i, j));
    } else if (u <= m_ + n_) {
      const int j = u - 1 - m_;
      for (int i = 0; i < m_; ++i) {
        if (flow(i, j) > 0) relax(supply_node(i), -c(i, j));
      }
      if (demand_[j] > 0) relax(sink(), 0);
    }
  }
}

bool TransportNetwork::Augment(TransportPlan& out) {
  std::vector<double> dist;
  std::vector<int> parent;
  ShortestPaths(dist, parent);
  if (dist[sink()] == kInf) return false;
  // Keep every residual reduced cost non-negative for the next Dijkstra.
  for (size_t v = 0; v < potential_.size(); ++v) {
    potential_[v] += std::min(dist[v], dist[sink()]);
  }
  int64_t amount = std::numeric_limits<int64_t>::max();
  for (int v = sink(); v != source(); v = parent[v]) {
    const int u = parent[v];
    if (u == source()) {
      amount = std::min(amount, supply_[v - 1]);
    } else if (v == sink()) {
      amount = std::min(amount, demand_[u - 1 - m_]);
    } else if (u > m_) {  // backward edge demand -> supply cancels flow
      amount = std::min(amount, flow(v - 1, u - 1 - m_));
    }
  }
  for (int v = sink(); v != source(); v = parent[v]) {
    const int u = parent[v];
    if (u == source()) {
      supply_[v - 1] -= amount;
    } else if (v == sink()) {
      demand_[u - 1 - m_] -= amount;
    } else if (u > m_) {
      flow(v - 1, u - 1 - m_) -= amount;
      out.cost -= static_cast<double>(amount) * c(v - 1, u - 1 - m_);
    } else {
      flow(u - 1, v - 1 - m_) += amount;
      out.cost += static_cast<double>(amount) * c(u - 1, v - 1 - m_);
    }
  }
  return true;
}

void TransportNetwork::Emit(TransportPlan& out) const {
  for (int i = 0; i < m_; ++i) {
    for (int j = 0; j < n_; ++j) {
      const int64_t f = flow_[static_cast<size_t>(i) * n_ + j];
      if (f > 0) out.flows.push_back({i, j, f});
    }
  }
}

}  // namespace

TransportPlan SolveMinCostTransport(std::span<const int64_t> supply, std::span<const int64_t> demand,
                                    std::span<const double> cost) {
  TransportNetwork network(supply, demand, cost);
  TransportPlan out;
  while (network.Augment(out)) {
  }
  network.Emit(out);
  return out;
}

}  // namespace taot

// The exact transport solvers against brute force on tiny cases, and against each other.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "taot/planner/solvers/max_flow.h"
#include "taot/planner/solvers/min_cost_transport.h"
#include "taot/planner/solvers/tree_transport.h"

namespace taot {
namespace {

// Minimum cost of moving min(sum supply, sum demand) units, by enumerating every integer flow.
double BruteForce(const std::vector<int64_t>& supply, const std::vector<int64_t>& demand,
                  const std::vector<double>& cost) {
  const size_t m = supply.size(), n = demand.size();
  int64_t total_s = 0, total_d = 0;
  for (int64_t x : supply) total_s += x;
  for (int64_t x : demand) total_d += x;
  const int64_t moved = std::min(total_s, total_d);
  std::vector<int64_t> s = supply, d = demand;
  double best = std::numeric_limits<double>::infinity();
  std::function<void(size_t, int64_t, double)> go = [&](size_t cell, int64_t sent, double acc) {
    if (acc >= best) return;
    if (cell == m * n) {
      if (sent == moved) best = acc;
      return;
    }
    const size_t i = cell / n, j = cell % n;
    for (int64_t f = std::min(s[i], d[j]); f >= 0; --f) {
      s[i] -= f;
      d[j] -= f;
      go(cell + 1, sent + f, acc + static_cast<double>(f) * cost[i * n + j]);
      s[i] += f;
      d[j] += f;
    }
  };
  go(0, 0, 0.0);
  return best;
}

double Cost(const TransportPlan& plan, const std::vector<double>& cost, size_t n) {
  double c = 0;
  for (const TransportFlow& f : plan.flows) c += static_cast<double>(f.amount) * cost[f.from * n + f.to];
  return c;
}

void ExpectFeasible(const TransportPlan& plan, const std::vector<int64_t>& supply, const std::vector<int64_t>& demand) {
  std::vector<int64_t> s(supply.size(), 0), d(demand.size(), 0);
  int64_t moved = 0;
  for (const TransportFlow& f : plan.flows) {
    ASSERT_GT(f.amount, 0);
    s[f.from] += f.amount;
    d[f.to] += f.amount;
    moved += f.amount;
  }
  int64_t total_s = 0, total_d = 0;
  for (size_t i = 0; i < supply.size(); ++i) {
    EXPECT_LE(s[i], supply[i]);
    total_s += supply[i];
  }
  for (size_t j = 0; j < demand.size(); ++j) {
    EXPECT_LE(d[j], demand[j]);
    total_d += demand[j];
  }
  EXPECT_EQ(moved, std::min(total_s, total_d));
}

TEST(MinCostTransportTest, MatchesBruteForceOnTinyCases) {
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    const size_t m = 1 + rng() % 3, n = 1 + rng() % 3;
    std::vector<int64_t> supply(m), demand(n);
    for (auto& x : supply) x = rng() % 4;
    for (auto& x : demand) x = rng() % 4;
    std::vector<double> cost(m * n);
    for (auto& c : cost) c = static_cast<double>(rng() % 10);
    const TransportPlan plan = SolveMinCostTransport(supply, demand, cost);
    ExpectFeasible(plan, supply, demand);
    EXPECT_DOUBLE_EQ(Cost(plan, cost, n), BruteForce(supply, demand, cost)) << "round " << round;
    EXPECT_DOUBLE_EQ(plan.cost, Cost(plan, cost, n));
  }
}

TEST(TreeTransportTest, MatchesBruteForceAndTheGeneralSolver) {
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    const int ranks = 2 + static_cast<int>(rng() % 3);
    std::vector<int> node_of(static_cast<size_t>(ranks));
    for (auto& n : node_of) n = static_cast<int>(rng() % 2);
    const Topology topo = *Topology::FromNodes(node_of, 1.0 + rng() % 4);
    std::vector<int64_t> supply(static_cast<size_t>(ranks)), demand(static_cast<size_t>(ranks));
    for (auto& x : supply) x = rng() % 3;
    for (auto& x : demand) x = rng() % 3;
    std::vector<double> cost(static_cast<size_t>(ranks * ranks));
    for (int a = 0; a < ranks; ++a) {
      for (int b = 0; b < ranks; ++b) cost[a * ranks + b] = topo.cost(a, b);
    }
    const TransportPlan tree = SolveTreeTransport(topo, *topo.tree_costs(), supply, demand);
    ExpectFeasible(tree, supply, demand);
    EXPECT_DOUBLE_EQ(tree.cost, Cost(tree, cost, ranks));
    if (ranks <= 3) {
      EXPECT_DOUBLE_EQ(tree.cost, BruteForce(supply, demand, cost)) << "round " << round;
    }
    EXPECT_DOUBLE_EQ(tree.cost, SolveMinCostTransport(supply, demand, cost).cost) << "round " << round;
  }
}

TEST(TreeTransportTest, LargerCasesAgreeWithTheGeneralSolver) {
  std::mt19937 rng(3);
  for (int round = 0; round < 20; ++round) {
    const int ranks = 8 + static_cast<int>(rng() % 40);
    const Topology topo = *Topology::Uniform(ranks, 1 + static_cast<int>(rng() % 8), 3.0);
    std::vector<int64_t> supply(static_cast<size_t>(ranks)), demand(static_cast<size_t>(ranks));
    for (int r = 0; r < ranks; ++r) {
      (rng() % 2 ? supply : demand)[r] = rng() % 1000;
    }
    std::vector<double> cost(static_cast<size_t>(ranks * ranks));
    for (int a = 0; a < ranks; ++a) {
      for (int b = 0; b < ranks; ++b) cost[a * ranks + b] = topo.cost(a, b);
    }
    const TransportPlan tree = SolveTreeTransport(topo, *topo.tree_costs(), supply, demand);
    ExpectFeasible(tree, supply, demand);
    EXPECT_DOUBLE_EQ(tree.cost, SolveMinCostTransport(supply, demand, cost).cost);
  }
}

// MatchOnTree consumes its supply and demand in place; what it leaves must be exactly what no
// flow took, also where supply runs out before the demands are met (the demand then being served
// is written back part-met).
TEST(TreeTransportTest, MatchOnTreeLeavesExactlyWhatNoFlowTook) {
  std::mt19937 rng(5);
  for (int round = 0; round < 50; ++round) {
    const int ranks = 4 + static_cast<int>(rng() % 30);
    const Topology topo = *Topology::Uniform(ranks, 1 + static_cast<int>(rng() % 6), 3.0);
    std::vector<int64_t> supply(static_cast<size_t>(ranks)), demand(static_cast<size_t>(ranks));
    for (int r = 0; r < ranks; ++r) {
      supply[r] = rng() % 3 ? static_cast<int64_t>(rng() % 50) : 0;
      demand[r] = rng() % 3 ? 0 : static_cast<int64_t>(rng() % 120);
    }
    std::vector<int> demand_ranks;
    for (int n = 0; n < topo.nodes(); ++n) {
      for (int r : topo.ranks_of_node(n)) {
        if (demand[r] > 0) demand_ranks.push_back(r);
      }
    }
    std::vector<int64_t> supply_left = supply, demand_left = demand;
    std::vector<int64_t> sent(static_cast<size_t>(ranks), 0), received(static_cast<size_t>(ranks), 0);
    MatchOnTree(topo, supply_left, demand_left, demand_ranks, [&](int from, int to, int64_t amount) {
      EXPECT_GT(amount, 0);
      sent[from] += amount;
      received[to] += amount;
    });
    int64_t total_supply = 0, total_demand = 0, moved = 0;
    for (int r = 0; r < ranks; ++r) {
      EXPECT_EQ(supply_left[r], supply[r] - sent[r]) << "round " << round << ", rank " << r;
      EXPECT_EQ(demand_left[r], demand[r] - received[r]) << "round " << round << ", rank " << r;
      EXPECT_GE(supply_left[r], 0);
      EXPECT_GE(demand_left[r], 0);
      total_supply += supply[r];
      total_demand += demand[r];
      moved += sent[r];
    }
    EXPECT_EQ(moved, std::min(total_supply, total_demand)) << "round " << round;
  }
}

TEST(TreeTransportTest, SinkTakesTheRestWithoutFlows) {
  const Topology topo = *Topology::Uniform(4, 2, 3.0);
  std::vector<int64_t> supply = {5, 5, 5, 5};
  std::vector<int64_t> demand = {0, 0, 4, 16};  // rank 3 is the sink
  const std::vector<int> ranks = {2, 3};
  int64_t to_rank2 = 0, inter = 0;
  MatchOnTree(
      topo, supply, demand, ranks,
      [&](int from, int to, int64_t amount) {
        // The sink still takes its own rank and node at the node level, but nothing after.
        if (to == 3) {
          EXPECT_TRUE(topo.same_node(from, to));
          return;
        }
        to_rank2 += amount;
        if (!topo.same_node(from, to)) inter += amount;
      },
      /*sink=*/3);
  EXPECT_EQ(to_rank2, 4);
  EXPECT_EQ(inter, 0);  // rank 2 is served from its own rank and node
  EXPECT_EQ(demand[3], 0);
}

TEST(MaxFlowTest, SmallNetwork) {
  MaxFlow f(4);
  const int a = f.AddEdge(0, 1, 3);
  const int b = f.AddEdge(0, 2, 2);
  f.AddEdge(1, 2, 5);
  f.AddEdge(1, 3, 2);
  f.AddEdge(2, 3, 3);
  EXPECT_EQ(f.Solve(0, 3), 5);
  EXPECT_EQ(f.flow(a) + f.flow(b), 5);
}

// After Reset, the instance solves a network as a new one does: no edge or flow of the last.
TEST(MaxFlowTest, ResetForgetsTheLastNetwork) {
  MaxFlow f(4);
  f.AddEdge(0, 1, 3);
  f.AddEdge(1, 3, 3);
  EXPECT_EQ(f.Solve(0, 3), 3);
  f.Reset(3);
  const int a = f.AddEdge(0, 1, 4);
  f.AddEdge(1, 2, 2);
  EXPECT_EQ(f.Solve(0, 2), 2);
  EXPECT_EQ(f.flow(a), 2);
  EXPECT_FALSE(f.OnSourceSide(2));
  EXPECT_TRUE(f.OnSourceSide(1));
}

// Dinic's algorithm as textbooks give it: one augmenting path per walk down from the source,
// each node's current arc kept for the phase. MaxFlow sends several paths per walk and must
// find the very same flow on every edge (the predictive split's shares, so its plans, are
// those flows).
class OnePathDinic {
 public:
  explicit OnePathDinic(int nodes) : out_(static_cast<size_t>(nodes)) {}
  void AddEdge(int from, int to, int64_t capacity) {
    out_[from].push_back(static_cast<int>(to_.size()));
    to_.push_back(to);
    room_.push_back(capacity);
    out_[to].push_back(static_cast<int>(to_.size()));
    to_.push_back(from);
    room_.push_back(0);
    original_.push_back(capacity);
  }
  void AddCapacity(int edge, int64_t extra) {
    room_[2 * static_cast<size_t>(edge)] += extra;
    original_[edge] += extra;
  }
  int64_t flow(int edge) const { return original_[edge] - room_[2 * static_cast<size_t>(edge)]; }
  int64_t Solve(int source, int sink) {
    int64_t total = 0;
    for (;;) {
      level_.assign(out_.size(), -1);
      level_[source] = 0;
      std::vector<int> queue = {source};
      for (size_t head = 0; head < queue.size(); ++head) {
        for (int id : out_[queue[head]]) {
          if (room_[id] > 0 && level_[to_[id]] < 0) {
            level_[to_[id]] = level_[queue[head]] + 1;
            queue.push_back(to_[id]);
          }
        }
      }
      if (level_[sink] < 0) return total;
      arc_.assign(out_.size(), 0);
      while (const int64_t pushed = OnePath(source, sink, std::numeric_limits<int64_t>::max())) total += pushed;
    }
  }

 private:
  int64_t OnePath(int node, int sink, int64_t limit) {
    if (node == sink) return limit;
    for (; arc_[node] < out_[node].size(); ++arc_[node]) {
      const int id = out_[node][arc_[node]];
      if (room_[id] <= 0 || level_[to_[id]] != level_[node] + 1) continue;
      if (const int64_t pushed = OnePath(to_[id], sink, std::min(limit, room_[id])); pushed > 0) {
        room_[id] -= pushed;
        room_[id ^ 1] += pushed;
        return pushed;
      }
    }
    return 0;
  }

  std::vector<std::vector<int>> out_;
  std::vector<int> to_, level_;
  std::vector<int64_t> room_, original_;
  std::vector<size_t> arc_;
};

// Max flow against brute force: on random networks of up to 10 nodes (parallel arcs, cycles, arcs
// into the source and out of the sink), the flow equals the least capacity of a cut over every
// node subset, each edge's flow is within its capacity and conserved at every other node,
// OnSourceSide is a minimum cut, and after AddCapacity a second Solve reaches the new network's
// maximum. Each Push sends several paths (max_flow.cc): a path sent past an arc's or the
// caller's room breaks the bounds or the value, and one sent in another order than
// OnePathDinic's moves an edge's flow.
TEST(MaxFlowTest, EqualsTheMinimumCutOnRandomNetworks) {
  std::mt19937 rng(5);
  for (int trial = 0; trial < 2000; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 9);
    struct Arc {
      int from, to, id;
      int64_t capacity;
    };
    std::vector<Arc> arcs;
    MaxFlow f(n);
    OnePathDinic reference(n);
    for (int i = 0, m = static_cast<int>(rng() % (4 * n)); i < m; ++i) {
      const int from = static_cast<int>(rng() % n), to = static_cast<int>(rng() % n);
      if (from == to) continue;
      const int64_t capacity = static_cast<int64_t>(rng() % 10);
      arcs.push_back({from, to, f.AddEdge(from, to, capacity), capacity});
      reference.AddEdge(from, to, capacity);
    }
    const int source = 0, sink = n - 1;
    int64_t reference_value = 0;  // what the reference has sent so far
    auto min_cut = [&] {
      int64_t best = std::numeric_limits<int64_t>::max();
      for (uint32_t side = 0; side < (1u << n); ++side) {  // bit v: v is on the source's side
        if (!(side & 1u) || (side >> sink & 1u)) continue;
        int64_t cut = 0;
        for (const Arc& a : arcs) {
          if ((side >> a.from & 1u) && !(side >> a.to & 1u)) cut += a.capacity;
        }
        best = std::min(best, cut);
      }
      return best;
    };
    auto check = [&](int64_t value) {
      ASSERT_EQ(value, min_cut()) << "trial " << trial;
      ASSERT_EQ(value, reference.Solve(source, sink) + reference_value) << "trial " << trial;
      reference_value = value;
      for (const Arc& a : arcs) EXPECT_EQ(f.flow(a.id), reference.flow(a.id)) << "trial " << trial << " edge " << a.id;
      std::vector<int64_t> net(static_cast<size_t>(n), 0);
      int64_t across = 0;
      for (const Arc& a : arcs) {
        const int64_t flow = f.flow(a.id);
        ASSERT_GE(flow, 0) << "trial " << trial;
        ASSERT_LE(flow, a.capacity) << "trial " << trial;
        net[a.from] -= flow;
        net[a.to] += flow;
        if (f.OnSourceSide(a.from) && !f.OnSourceSide(a.to)) across += a.capacity;
      }
      for (int v = 1; v + 1 < n; ++v) EXPECT_EQ(net[v], 0) << "trial " << trial << " node " << v;
      EXPECT_EQ(net[sink], value) << "trial " << trial;
      EXPECT_FALSE(f.OnSourceSide(sink));
      EXPECT_EQ(across, value) << "trial " << trial << ": the source side is not a minimum cut";
    };
    const int64_t first = f.Solve(source, sink);
    check(first);
    if (arcs.empty()) continue;
    Arc& raised = arcs[rng() % arcs.size()];
    const int64_t extra = static_cast<int64_t>(rng() % 6);
    f.AddCapacity(raised.id, extra);
    reference.AddCapacity(raised.id, extra);
    raised.capacity += extra;
    check(first + f.Solve(source, sink));
  }
}

}  // namespace
}  // namespace taot

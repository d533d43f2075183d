// EPLB (DeepSeek) as its own code does it: deepseek-ai/EPLB at
// d52c72d5b2f2fb4c41afbf8eb21366820239913d, eplb.py, rebalance_experts (ported in
// eplb_rebalance.cc), called as the public fixtures call it (tests/data/peers, whose README is
// the "EPLB" section of the fixtures' notes): weight = the per-expert token totals as one layer,
// num_replicas = E + R*K (E/R + K physical slots per GPU), num_gpus = R, num_groups = 8 or R
// (parameter groups), num_nodes = the node count when every node has the same number of ranks,
// else 1 (EPLB cannot express unequal nodes; with one node it balances over all GPUs at once).
//
// EPLB has no homes and no slot limit: it lays every expert out afresh. Its layout becomes a
// fixed-home plan the way the fixtures' conversion does it:
// 1. EPLB's nodes, and GPUs within a node, are interchangeable, so its GPUs are relabelled onto
//    our ranks to keep as many experts as possible at home: EPLB nodes onto real nodes
//    maximising the (expert, GPU) pairs whose expert's home is in the node, then, inside each
//    matched pair, GPUs onto ranks maximising the (expert, GPU) pairs on the expert's home rank.
//    Both are assignment problems, solved as SciPy's linear_sum_assignment solves them
//    (MaxWeightAssignment), so that ties between optimal relabellings break the same way.
// 2. Each copy on a rank other than its expert's home is the replica (expert, rank); two copies
//    on one rank are one replica.
// 3. Tokens follow EPLB's load model: an expert's total splits evenly over its copies, the
//    remainder one token each to the first copies in physical-slot order; the home's share stays
//    home; replicas, in the order of their first physical slot, take consecutive slices of the
//    expert's tokens laid out source by source.
// So its plans put up to E/R + K guests on a rank: the planner is comparison only. It knows
// nothing of a target imbalance, resident replicas or link costs, and ignores them.
#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "planners/builtin.h"
#include "planners/eplb_rebalance.h"
#include "planners/params.h"
#include "planners/plan_building.h"
#include "taot/planner/load_stats.h"
#include "taot/planner/solvers/assignment.h"

namespace taot::planners {
namespace {

// EPLB's node count for this topology: the nodes when they are all the same size, else one.
int EplbNodes(const Topology& topology) {
  for (int n = 1; n < topology.nodes(); ++n) {
    if (topology.ranks_of_node(n).size() != topology.ranks_of_node(0).size()) return 1;
  }
  return topology.nodes();
}

// Per EPLB GPU: the distinct experts it holds.
std::vector<std::vector<int>> ExpertsPerGpu(const EplbLayout& layout, int gpus) {
  std::vector<std::vector<int>> out(static_cast<size_t>(gpus));
  for (int p = 0; p < static_cast<int>(layout.phy2log.size()); ++p)
    out[p / layout.slots_per_gpu].push_back(layout.phy2log[p]);
  for (std::vector<int>& experts : out) {
    std::sort(experts.begin(), experts.end());
    experts.erase(std::unique(experts.begin(), experts.end()), experts.end());
  }
  return out;
}

// Step 1: gpu_to_rank. EPLB node a holds GPUs [a * G, (a + 1) * G); with one EPLB node its GPUs
// go onto all ranks in order.
std::vector<int> RelabelGpus(const PlanRequest& request, const EplbLayout& layout, int eplb_nodes) {
  const Topology& topology = request.topology();
  const int ranks = request.ranks();
  const int gpus_per_node = ranks / eplb_nodes;
  const std::vector<std::vector<int>> held = ExpertsPerGpu(layout, ranks);
  std::vector<std::vector<int>> ranks_of(static_cast<size_t>(eplb_nodes));
  if (eplb_nodes == 1) {
    for (int r = 0; r < ranks; ++r) ranks_of[0].push_back(r);
  } else {
    std::vector<double> in_home_node(static_cast<size_t>(eplb_nodes) * eplb_nodes, 0);
    for (int g = 0; g < ranks; ++g) {
      for (int e : held[g]) in_home_node[(g / gpus_per_node) * eplb_nodes + topology.node_of(request.home_of(e))] += 1;
    }
    const std::vector<int> node_of_eplb_node = MaxWeightAssignment(eplb_nodes, in_home_node);
    for (int a = 0; a < eplb_nodes; ++a) {
      const auto node_ranks = topology.ranks_of_node(node_of_eplb_node[a]);
      ranks_of[a].assign(node_ranks.begin(), node_ranks.end());
    }
  }
  std::vector<int> gpu_to_rank(static_cast<size_t>(ranks));
  for (int a = 0; a < eplb_nodes; ++a) {
    std::vector<double> at_home(static_cast<size_t>(gpus_per_node) * gpus_per_node, 0);
    for (int i = 0; i < gpus_per_node; ++i) {
      for (int e : held[a * gpus_per_node + i]) {
        const auto j = std::find(ranks_of[a].begin(), ranks_of[a].end(), request.home_of(e));
        if (j != ranks_of[a].end()) at_home[i * gpus_per_node + (j - ranks_of[a].begin())] += 1;
      }
    }
    const std::vector<int> column = MaxWeightAssignment(gpus_per_node, at_home);
    for (int i = 0; i < gpus_per_node; ++i) gpu_to_rank[a * gpus_per_node + i] = ranks_of[a][column[i]];
  }
  return gpu_to_rank;
}

// Steps 2 and 3: the guest shares, in the order of each replica's first physical slot.
std::vector<GuestShare> GuestShares(const PlanRequest& request, const EplbLayout& layout,
                                    const std::vector<int>& gpu_to_rank) {
  const std::vector<int64_t> totals = ExpertTotals(request);
  std::vector<int> copies_seen(totals.size(), 0);
  std::map<std::pair<int, int>, size_t> replica_index;  // (expert, rank) -> index in shares
  std::vector<GuestShare> shares;
  for (int p = 0; p < static_cast<int>(layout.phy2log.size()); ++p) {
    const int e = layout.phy2log[p];
    const int64_t copies = layout.logcnt[e];
    const int64_t share = totals[e] / copies + (copies_seen[e]++ < totals[e] % copies ? 1 : 0);
    const int rank = gpu_to_rank[p / layout.slots_per_gpu];
    if (rank == request.home_of(e)) continue;
    const auto [it, added] = replica_index.emplace(std::pair{e, rank}, shares.size());
    if (added) shares.push_back({e, rank, 0});
    shares[it->second].tokens += share;
  }
  return shares;
}

class EplbPlanner final : public Planner {
 public:
  // groups: 0 stands for R.
  explicit EplbPlanner(int groups) : groups_(groups) {}
  std::string_view name() const override { return "eplb"; }
  bool comparison_only() const override { return true; }
  absl::StatusOr<Plan> MakePlan(const PlanRequest& request) override {
    const int ranks = request.ranks();
    const int experts = request.experts();
    const int nodes = EplbNodes(request.topology());
    EplbShape shape{experts + ranks * request.slots_per_rank(), groups_ == 0 ? ranks : groups_, nodes, ranks};
    // Where E is no multiple of the groups EPLB's code asserts; the port takes EPLB's own
    // fallback for groups that do not fit (its global policy) rather than fail a valid request.
    if (experts % shape.num_groups != 0) shape = {shape.num_replicas, 1, 1, ranks};
    absl::StatusOr<EplbLayout> layout = RebalanceExperts(ExpertTotals(request), shape);
    if (!layout.ok()) return layout.status();
    Plan plan;
    AppendSlicedSharesInOrder(request, GuestShares(request, *layout, RelabelGpus(request, *layout, nodes)), plan);
    return plan;
  }

 private:
  int groups_;
};

}  // namespace

PlannerOr MakeEplb(const PlannerParams& params) {
  ParamReader reader("eplb", params);
  const std::string groups = reader.String("groups", "8");
  int count = 0;
  if (groups != "R" && (!absl::SimpleAtoi(groups, &count) || count < 1)) {
    return absl::InvalidArgumentError("planner eplb: parameter groups: must be R or an integer >= 1, got '" + groups +
                                      "'");
  }
  if (absl::Status s = reader.Finish(); !s.ok()) return s;
  return std::make_unique<EplbPlanner>(groups == "R" ? 0 : count);
}

}  // namespace taot::planners

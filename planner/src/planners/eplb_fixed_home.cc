// eplb-fixed-home: EPLB's ideas (from its description in github.com/deepseek-ai/EPLB's README) on the fixed-home model,
// a different algorithm from EPLB's code (that one is `eplb`, eplb.cc). It sees only per-expert
// totals; hierarchical: it balances nodes first, then adds replicas of the heaviest experts inside
// each node; an expert's tokens are split evenly over its copies. It ignores communication cost.
// Unlike EPLB it keeps every expert on its home and adds at most K replicas per rank:
// 1. nodes: while it lowers the heaviest node's load, copy the heaviest expert (per copy) of
//    the heaviest node into the least-loaded GPU with a free slot of the lightest node;
// 2. inside each node: while it lowers the node's heaviest GPU, copy the node's heaviest
//    expert (per copy) into the node's least-loaded GPU with a free slot (EPLB's
//    replicate-then-pack, done one replica at a time).
#include <algorithm>

#include "planners/builtin.h"
#include "planners/params.h"
#include "planners/plan_building.h"
#include "planners/summing_planner.h"

namespace taot::planners {
namespace {

class Copies {
 public:
  Copies(const PlanRequest& request, const LoadSums& sums)
      : request_(request),
        experts_per_rank_(request.experts_per_rank()),
        totals_(sums.expert_totals),
        guests_(static_cast<size_t>(request.experts())),
        free_slots_(static_cast<size_t>(request.ranks()), request.slots_per_rank()) {}

  // Even split: every guest takes total / copies, the home the rest.
  int64_t share(int e) const { return totals_[e] / static_cast<int64_t>(guests_[e].size() + 1); }
  double per_copy(int e) const { return static_cast<double>(totals_[e]) / static_cast<double>(guests_[e].size() + 1); }
  std::vector<int64_t> RankLoads() const {
    std::vector<int64_t> load(static_cast<size_t>(request_.ranks()), 0);
    const int experts = request_.experts();
    for (int e = 0; e < experts; ++e) {
      const int64_t s = share(e);
      load[e / experts_per_rank_] += totals_[e] - s * static_cast<int64_t>(guests_[e].size());
      for (int g : guests_[e]) load[g] += s;
    }
    return load;
  }
  bool CanHost(int e, int rank) const {
    return free_slots_[rank] > 0 && rank != e / experts_per_rank_ &&
           std::find(guests_[e].begin(), guests_[e].end(), rank) == guests_[e].end();
  }
  void Add(int e, int rank) {
    guests_[e].push_back(rank);
    --free_slots_[rank];
  }
  void Undo(int e) {
    ++free_slots_[guests_[e].back()];
    guests_[e].pop_back();
  }
  std::vector<GuestShare> Shares() const {
    std::vector<GuestShare> shares;
    for (int e = 0; e < request_.experts(); ++e) {
      for (int g : guests_[e]) shares.push_back({e, g, share(e)});
    }
    return shares;
  }

 private:
  const PlanRequest& request_;
  const int experts_per_rank_;  // home of expert e: e / experts_per_rank_
  const std::vector<int64_t>& totals_;
  std::vector<std::vector<int>> guests_;
  std::vector<int> free_slots_;
};

int64_t LoadOf(const std::vector<int64_t>& rank_load, std::span<const int> ranks) {
  int64_t sum = 0;
  for (int r : ranks) sum += rank_load[r];
  return sum;
}

// The least-loaded rank of `ranks` that can host e, or -1.
int LightestHost(const Copies& copies, const std::vector<int64_t>& load, std::span<const int> ranks, int e) {
  int best = -1;
  for (int r : ranks) {
    if (copies.CanHost(e, r) && (best < 0 || load[r] < load[best])) best = r;
  }
  return best;
}

// The expert homed in `ranks` with the heaviest load per copy that some rank of `targets`
// can host; -1 if none.
int HeaviestMovable(const Copies& copies, const PlanRequest& request, std::span<const int> ranks,
                    std::span<const int> targets, const std::vector<int64_t>& load) {
  int best = -1;
  const int per_rank = request.experts_per_rank();
  for (int r : ranks) {
    for (int e = r * per_rank; e < (r + 1) * per_rank; ++e) {
      if (LightestHost(copies, load, targets, e) < 0) continue;
      if (best < 0 || copies.per_copy(e) > copies.per_copy(best)) best = e;
    }
  }
  return best;
}

void BalanceNodes(const PlanRequest& request, Copies& copies) {
  const Topology& topo = request.topology();
  while (topo.nodes() > 1) {
    const std::vector<int64_t> load = copies.RankLoads();
    int heavy = 0, light = -1;
    for (int n = 0; n < topo.nodes(); ++n) {
      const int64_t l = LoadOf(load, topo.ranks_of_node(n));
      if (l > LoadOf(load, topo.ranks_of_node(heavy))) heavy = n;
    }
    for (int n = 0; n < topo.nodes(); ++n) {
      if (n == heavy) continue;
      if (light < 0 || LoadOf(load, topo.ranks_of_node(n)) < LoadOf(load, topo.ranks_of_node(light))) light = n;
    }
    const int e = HeaviestMovable(copies, request, topo.ranks_of_node(heavy), topo.ranks_of_node(light), load);
    if (e < 0) return;
    copies.Add(e, LightestHost(copies, load, topo.ranks_of_node(light), e));
    const std::vector<int64_t> after = copies.RankLoads();
    int64_t max_before = 0, max_after = 0;
    for (int n = 0; n < topo.nodes(); ++n) {
      max_before = std::max(max_before, LoadOf(load, topo.ranks_of_node(n)));
      max_after = std::max(max_after, LoadOf(after, topo.ranks_of_node(n)));
    }
    if (max_after >= max_before) {
      copies.Undo(e);
      return;
    }
  }
}

void BalanceInsideNode(const PlanRequest& request, std::span<const int> ranks, Copies& copies) {
  while (true) {
    const std::vector<int64_t> load = copies.RankLoads();
    const int e = HeaviestMovable(copies, request, ranks, ranks, load);
    if (e < 0) return;
    int64_t max_before = 0, max_after = 0;
    for (int r : ranks) max_before = std::max(max_before, load[r]);
    copies.Add(e, LightestHost(copies, load, ranks, e));
    const std::vector<int64_t> after = copies.RankLoads();
    for (int r : ranks) max_after = std::max(max_after, after[r]);
    if (max_after >= max_before) {
      copies.Undo(e);
      return;
    }
  }
}

class EplbFixedHomePlanner final : public SummingPlanner {
 public:
  std::string_view name() const override { return "eplb-fixed-home"; }

 private:
  absl::StatusOr<Plan> PlanFromSums(const PlanRequest& request, const LoadSums& sums) override {
    Copies copies(request, sums);
    BalanceNodes(request, copies);
    for (int n = 0; n < request.topology().nodes(); ++n) {
      BalanceInsideNode(request, request.topology().ranks_of_node(n), copies);
    }
    Plan plan;
    AppendSlicedShares(request, copies.Shares(), plan);
    return plan;
  }
};

}  // namespace

PlannerOr MakeEplbFixedHome(const PlannerParams& params) {
  ParamReader reader("eplb-fixed-home", params);
  if (absl::Status s = reader.Finish(); !s.ok()) return s;
  return std::make_unique<EplbFixedHomePlanner>();
}

}  // namespace taot::planners

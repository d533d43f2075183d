#include "taot/planner/scorecard.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <span>

#include "taot/planner/load_stats.h"

namespace taot {
namespace {

void CountTransfers(const PlanRequest& request, const Plan& plan, Scorecard& score) {
  const std::set<Replica> resident(request.resident.begin(), request.resident.end());
  for (const Replica& r : plan.replicas) {
    if (resident.contains(r)) {
      ++score.reused_replicas;
      continue;
    }
    const int home = request.home_of(r.expert);
    if (request.topology().same_node(home, r.rank)) {
      ++score.intra_node_transfers;
      score.bytes_moved_intra_node += request.expert_bytes();
    } else {
      ++score.inter_node_transfers;
      score.bytes_moved_inter_node += request.expert_bytes();
    }
    score.weighted_cost += request.topology().cost(home, r.rank);
  }
}

// Where every token is computed relative to its source: the home's class from each row's
// segments of its own rank and its node-mates (a few experts each), inter-node the rest of the
// layer's `total`; then each guest token moved from its home's class to its guest's. Classifying
// every (source, home) pair cost a burst's EP256 plan more than the planner (docs/performance.md,
// "The checks around a plan").
void CountDispatch(const PlanRequest& request, const Plan& plan, int64_t total, Scorecard& score) {
  const Topology& topo = request.topology();
  const int per_home = request.experts_per_rank();
  auto segment = [&](std::span<const int64_t> row, int home) {
    const auto first = row.begin() + static_cast<std::ptrdiff_t>(home) * per_home;
    return std::accumulate(first, first + per_home, int64_t{0});
  };
  for (int s = 0; s < request.ranks(); ++s) {
    const std::span<const int64_t> row = request.load.row(s);
    for (int mate : topo.ranks_of_node(topo.node_of(s))) {
      (mate == s ? score.tokens_local : score.tokens_intra_node) += segment(row, mate);
    }
  }
  score.tokens_inter_node = total - score.tokens_local - score.tokens_intra_node;
  auto add = [&](int source, int rank, int64_t tokens) {
    if (source == rank) {
      score.tokens_local += tokens;
    } else if (topo.same_node(source, rank)) {
      score.tokens_intra_node += tokens;
    } else {
      score.tokens_inter_node += tokens;
    }
  };
  for (const Assignment& a : plan.assignments) {
    add(a.source, request.home_of(a.expert), -a.tokens);
    add(a.source, a.rank, a.tokens);
  }
}

}  // namespace

double EffectiveTarget(const PlanRequest& request) {
  return request.target_imbalance_pct.value_or(kDefaultTargetImbalancePct);
}

Scorecard Score(const PlanRequest& request, const Plan& plan, double plan_time_us) {
  return Score(request, plan, plan_time_us, ExpertTotals(request));
}

Scorecard Score(const PlanRequest& request, const Plan& plan, double plan_time_us,
                std::span<const int64_t> expert_totals) {
  Scorecard score;
  const std::vector<int64_t> before = HomeLoads(request, expert_totals);
  std::vector<int64_t> after = before;
  MoveGuestTokens(request, plan, after);
  score.imbalance_before_pct = ImbalancePct(before);
  score.imbalance_after_pct = ImbalancePct(after);
  score.target_imbalance_pct = plan.chosen_target_pct.value_or(EffectiveTarget(request));
  int64_t total = 0;
  for (int64_t l : before) total += l;
  const int64_t cap = LoadCap(total, request.ranks(), score.target_imbalance_pct);
  score.target_met = *std::max_element(after.begin(), after.end()) <= cap;
  CountTransfers(request, plan, score);
  CountDispatch(request, plan, total, score);
  score.plan_time_us = plan_time_us;
  return score;
}

}  // namespace taot

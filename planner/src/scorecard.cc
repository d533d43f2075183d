#include "taot/planner/scorecard.h"

#include <algorithm>
#include <numeric>
#include <set>

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

void CountDispatch(const PlanRequest& request, const Plan& plan, Scorecard& score) {
  const Topology& topo = request.topology();
  auto add = [&](int source, int rank, int64_t tokens) {
    if (source == rank) {
      score.tokens_local += tokens;
    } else if (topo.same_node(source, rank)) {
      score.tokens_intra_node += tokens;
    } else {
      score.tokens_inter_node += tokens;
    }
  };
  // Each home's experts are contiguous in a row: one classification per (source, home).
  const int per_home = request.experts_per_rank();
  for (int s = 0; s < request.ranks(); ++s) {
    const std::span<const int64_t> row = request.load.row(s);
    for (int h = 0; h < request.ranks(); ++h) {
      const auto first = row.begin() + static_cast<std::ptrdiff_t>(h) * per_home;
      add(s, h, std::accumulate(first, first + per_home, int64_t{0}));
    }
  }
  // Guest tokens were counted at home above; move them to their guest.
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
  Scorecard score;
  const std::vector<int64_t> before = RankLoadsBefore(request);
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
  CountDispatch(request, plan, score);
  score.plan_time_us = plan_time_us;
  return score;
}

}  // namespace taot

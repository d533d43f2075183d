// TAOT as published (arXiv 2608.03676; BACKGROUND.md §2), for side-by-side comparison with our
// `taot`. Three phases:
// 1. rank level: supply max(l_h - mean, 0) on hot ranks, demand max(mean - l_c, 0) on cold
//    ranks; entropic OT with the Gibbs kernel exp(-W / epsilon), epsilon = the inter-node cost
//    (λ), 50 Sinkhorn iterations, then each column capped to its demand: the hint T[h][c];
// 2. expert level: each hot rank's spill (its load above the mean) is attributed to its
//    heaviest experts; score(e, r) = min(spill_e, spare_r) + α·bonus(home(e), r)
//    + 0.1·α·hint(home(e), r) with α the mean tokens per expert, bonus 1 intra-node, 1/λ
//    inter-node; column-first matching: K rounds, in each every cold rank proposes its best
//    expert and each expert keeps its best proposer (a rank turned down proposes to its next
//    choice within the round, so each round is a full matching);
// 3. token level: per replicated expert, guest slots bid for source ranks on bonus - price;
//    each source goes to its highest bidder, whose price rises by ε = 1; 300 rounds.
//
// Where the paper is silent we chose: the hint enters the score as T[h][c] / supply_h (a
// fraction in [0, 1]); a general cost matrix uses bonus = min(1, intra / cost) and epsilon =
// its largest entry; in the auction a source on the guest's node has bonus 1, others 1/λ, and
// a won source gives its winner as many tokens as both still have. Rounds after every slot is
// served change nothing, so they are skipped (the result is the same as running all 300).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "planners/builtin.h"
#include "planners/params.h"
#include "planners/plan_building.h"
#include "taot/planner/solvers/sinkhorn.h"

namespace taot::planners {
namespace {

struct PaperParams {
  int sinkhorn_iterations = 50;
  int auction_rounds = 300;
  double auction_epsilon = 1.0;
  double hint_weight = 0.1;
};

double MaxCost(const Topology& topo) {
  if (topo.tree_costs()) return topo.tree_costs()->inter;
  double m = 0;
  for (int a = 0; a < topo.ranks(); ++a) {
    for (int b = 0; b < topo.ranks(); ++b) m = std::max(m, topo.cost(a, b));
  }
  return m;
}

// Placement preference: 1 intra-node, 1/λ inter-node, 0 on the same rank.
double Bonus(const Topology& topo, int from, int to) {
  if (from == to) return 0;
  const double intra = topo.tree_costs() ? topo.tree_costs()->intra : kIntraNodeCost;
  const double c = topo.cost(from, to);
  return c <= intra ? 1.0 : intra / c;
}

// One round of column-first matching: every cold rank with a free slot and room proposes to
// the experts with spill in decreasing score; an expert keeps its best proposer so far and a
// displaced rank proposes to its next choice (deferred acceptance), so the round ends in a
// stable one-to-one matching. Returns, per expert, the cold rank it keeps (or -1).
template <typename Score>
std::vector<int> ColumnFirstRound(const PlanRequest& request, const std::vector<int>& hot, const std::vector<int>& cold,
                                  const std::vector<double>& spill, const std::vector<double>& spare,
                                  const std::vector<int>& slots_used, const std::vector<char>& holds, Score score) {
  const int R = request.ranks();
  const int per_rank = request.experts_per_rank();
  std::vector<std::vector<std::pair<double, int>>> wishes(static_cast<size_t>(R));
  std::vector<int> free_ranks;
  for (int c : cold) {
    if (spare[c] < 1 || slots_used[c] >= request.slots_per_rank()) continue;
    for (int h : hot) {
      for (int e = h * per_rank; e < (h + 1) * per_rank; ++e) {
        if (spill[e] >= 1 && !holds[static_cast<size_t>(e) * R + c]) wishes[c].push_back({score(e, c), e});
      }
    }
    std::stable_sort(wishes[c].begin(), wishes[c].end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    free_ranks.push_back(c);
  }
  std::vector<int> holder(static_cast<size_t>(request.experts()), -1);
  std::vector<double> held_score(static_cast<size_t>(request.experts()), 0);
  std::vector<size_t> next(static_cast<size_t>(R), 0);
  while (!free_ranks.empty()) {
    const int c = free_ranks.back();
    free_ranks.pop_back();
    while (next[c] < wishes[c].size()) {
      const auto [value, e] = wishes[c][next[c]++];
      if (holder[e] >= 0 && value <= held_score[e]) continue;
      if (holder[e] >= 0) free_ranks.push_back(holder[e]);
      holder[e] = c;
      held_score[e] = value;
      break;
    }
  }
  return holder;
}

class TaotPaperPlanner final : public Planner {
 public:
  explicit TaotPaperPlanner(PaperParams params) : params_(params) {}
  std::string_view name() const override { return "taot-paper"; }
  absl::StatusOr<Plan> MakePlan(const PlanRequest& request) override;

 private:
  struct Placed {
    int expert;
    int rank;
    int64_t tokens;
  };
  std::vector<double> RankHint(const PlanRequest& request, const std::vector<double>& supply,
                               const std::vector<double>& demand, const std::vector<int>& hot,
                               const std::vector<int>& cold) const;
  void Auction(const PlanRequest& request, int expert, const std::vector<Placed>& guests, Plan& plan) const;

  PaperParams params_;
};

std::vector<double> TaotPaperPlanner::RankHint(const PlanRequest& request, const std::vector<double>& supply,
                                               const std::vector<double>& demand, const std::vector<int>& hot,
                                               const std::vector<int>& cold) const {
  const size_t H = hot.size(), C = cold.size();
  std::vector<double> a(H), b(C), w(H * C);
  for (size_t i = 0; i < H; ++i) a[i] = supply[hot[i]];
  for (size_t j = 0; j < C; ++j) b[j] = demand[cold[j]];
  const Topology& topo = request.topology();
  for (size_t i = 0; i < H; ++i) {
    for (size_t j = 0; j < C; ++j) w[i * C + j] = topo.cost(hot[i], cold[j]);
  }
  std::vector<double> t = Sinkhorn(a, b, w, MaxCost(topo), params_.sinkhorn_iterations);
  for (size_t j = 0; j < C; ++j) {
    double column = 0;
    for (size_t i = 0; i < H; ++i) column += t[i * C + j];
    if (column > b[j] && column > 0) {
      for (size_t i = 0; i < H; ++i) t[i * C + j] *= b[j] / column;
    }
  }
  return t;
}

void TaotPaperPlanner::Auction(const PlanRequest& request, int expert, const std::vector<Placed>& guests,
                               Plan& plan) const {
  const Topology& topo = request.topology();
  const std::vector<int>& node_of = topo.node_of_rank();
  const int R = request.ranks();
  const double inter_bonus = 1.0 / MaxCost(topo);
  std::vector<int64_t> left(static_cast<size_t>(R));
  for (int s = 0; s < R; ++s) left[s] = request.load.at(s, expert);
  std::vector<int64_t> need(guests.size());
  for (size_t g = 0; g < guests.size(); ++g) need[g] = guests[g].tokens;
  std::vector<double> price(static_cast<size_t>(R), 0.0);
  std::vector<std::vector<int64_t>> got(guests.size(), std::vector<int64_t>(static_cast<size_t>(R), 0));
  for (int round = 0; round < params_.auction_rounds; ++round) {
    // Each slot with need bids for its best source; each source keeps its highest bid.
    std::vector<int> winner(static_cast<size_t>(R), -1);
    std::vector<double> best_bid(static_cast<size_t>(R), 0.0);
    bool any = false;
    for (size_t g = 0; g < guests.size(); ++g) {
      if (need[g] == 0) continue;
      int pick = -1;
      double value = 0;
      const int guest_node = topo.node_of(guests[g].rank);
      for (int s = 0; s < R; ++s) {
        if (left[s] == 0) continue;
        const double v = (node_of[s] == guest_node ? 1.0 : inter_bonus) - price[s];
        if (pick < 0 || v > value) {
          pick = s;
          value = v;
        }
      }
      if (pick < 0) continue;
      if (winner[pick] < 0 || value > best_bid[pick]) {
        winner[pick] = static_cast<int>(g);
        best_bid[pick] = value;
      }
      any = true;
    }
    if (!any) break;
    for (int s = 0; s < R; ++s) {
      if (winner[s] < 0) continue;
      const auto g = static_cast<size_t>(winner[s]);
      const int64_t take = std::min(need[g], left[s]);
      need[g] -= take;
      left[s] -= take;
      got[g][s] += take;
      price[s] += params_.auction_epsilon;
    }
  }
  for (size_t g = 0; g < guests.size(); ++g) {
    for (int s = 0; s < R; ++s) {
      if (got[g][s] > 0) plan.assignments.push_back({s, expert, guests[g].rank, got[g][s]});
    }
  }
}

absl::StatusOr<Plan> TaotPaperPlanner::MakePlan(const PlanRequest& request) {
  const LoadSums sums = SumLoads(request);
  const Topology& topo = request.topology();
  const int R = request.ranks();
  const int per_rank = request.experts_per_rank();
  const double mean = static_cast<double>(sums.total) / R;
  Plan plan;
  if (request.slots_per_rank() == 0 || sums.total == 0) return plan;

  std::vector<double> supply(static_cast<size_t>(R), 0), spare(static_cast<size_t>(R), 0);
  std::vector<int> hot, cold;
  for (int r = 0; r < R; ++r) {
    const double l = static_cast<double>(sums.rank_loads[r]);
    if (l > mean) {
      supply[r] = l - mean;
      hot.push_back(r);
    } else if (l < mean) {
      spare[r] = mean - l;
      cold.push_back(r);
    }
  }
  if (hot.empty() || cold.empty()) return plan;
  const std::vector<double> hint = RankHint(request, supply, spare, hot, cold);
  std::vector<double> hint_fraction(static_cast<size_t>(R) * R, 0.0);
  for (size_t i = 0; i < hot.size(); ++i) {
    for (size_t j = 0; j < cold.size(); ++j) {
      hint_fraction[static_cast<size_t>(hot[i]) * R + cold[j]] = hint[i * cold.size() + j] / supply[hot[i]];
    }
  }

  // Phase 2: spill of each hot rank, heaviest experts first.
  std::vector<double> spill(static_cast<size_t>(request.experts()), 0);
  for (int h : hot) {
    std::vector<int> experts(static_cast<size_t>(per_rank));
    std::iota(experts.begin(), experts.end(), h * per_rank);
    std::stable_sort(experts.begin(), experts.end(),
                     [&](int a, int b) { return sums.expert_totals[a] > sums.expert_totals[b]; });
    double left = supply[h];
    for (int e : experts) {
      spill[e] = std::min(static_cast<double>(sums.expert_totals[e]), left);
      left -= spill[e];
    }
  }
  const double alpha = static_cast<double>(sums.total) / request.experts();
  std::vector<int> slots_used(static_cast<size_t>(R), 0);
  std::vector<char> holds(static_cast<size_t>(request.experts()) * R, 0);
  std::vector<Placed> placed;
  const int experts = request.experts();
  for (int round = 0; round < request.slots_per_rank(); ++round) {
    const std::vector<int> holder =
        ColumnFirstRound(request, hot, cold, spill, spare, slots_used, holds, [&](int e, int c) {
          const int h = e / per_rank;
          return std::min(spill[e], spare[c]) + alpha * Bonus(topo, h, c) +
                 params_.hint_weight * alpha * hint_fraction[static_cast<size_t>(h) * R + c];
        });
    for (int e = 0; e < experts; ++e) {
      const int c = holder[e];
      if (c < 0) continue;
      const auto tokens = static_cast<int64_t>(std::floor(std::min(spill[e], spare[c])));
      spill[e] -= static_cast<double>(tokens);
      spare[c] -= static_cast<double>(tokens);
      ++slots_used[c];
      holds[static_cast<size_t>(e) * R + c] = 1;
      placed.push_back({e, c, tokens});
    }
  }

  // Phase 3: token-level auction per replicated expert.
  std::stable_sort(placed.begin(), placed.end(), [](const Placed& a, const Placed& b) { return a.expert < b.expert; });
  for (size_t i = 0; i < placed.size();) {
    size_t j = i;
    std::vector<Placed> guests;
    while (j < placed.size() && placed[j].expert == placed[i].expert) guests.push_back(placed[j++]);
    for (const Placed& g : guests) plan.replicas.push_back({g.expert, g.rank});
    Auction(request, placed[i].expert, guests, plan);
    i = j;
  }
  return plan;
}

}  // namespace

PlannerOr MakeTaotPaper(const PlannerParams& params) {
  ParamReader reader("taot-paper", params);
  PaperParams p;
  p.sinkhorn_iterations = static_cast<int>(reader.Int("sinkhorn_iterations", 50, 1, 100000));
  p.auction_rounds = static_cast<int>(reader.Int("auction_rounds", 300, 1, 100000));
  p.auction_epsilon = reader.Double("auction_epsilon", 1.0, 1e-9, 1e9);
  p.hint_weight = reader.Double("hint_weight", 0.1, 0.0, 1e9);
  if (absl::Status s = reader.Finish(); !s.ok()) return s;
  return std::make_unique<TaotPaperPlanner>(p);
}

}  // namespace taot::planners

#include "taot/planner/load_stats.h"

#include <algorithm>
#include <cmath>

namespace taot {

int64_t TotalTokens(const LoadMatrix& load) {
  int64_t total = 0;
  for (const int64_t v : load.data()) total += v;
  return total;
}

// Integer sums are exact in any order, so a wider vector unit changes nothing but the time; GCC
// picks the AVX2 clone at load time where the CPU has it.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx2", "default")))
#endif
void ExpertTotals(const PlanRequest& request, std::vector<int64_t>& totals) {
  const size_t E = static_cast<size_t>(request.experts());
  const int S = request.load.sources();
  totals.assign(E, 0);
  int64_t* __restrict out = totals.data();
  const int64_t* in = request.load.data().data();
  // Four rows per pass over `totals`: a quarter of the loads and stores of the accumulator.
  int s = 0;
  for (; s + 4 <= S; s += 4, in += 4 * E) {
    for (size_t e = 0; e < E; ++e) out[e] += (in[e] + in[E + e]) + (in[2 * E + e] + in[3 * E + e]);
  }
  for (; s < S; ++s, in += E) {
    for (size_t e = 0; e < E; ++e) out[e] += in[e];
  }
}

std::vector<int64_t> ExpertTotals(const PlanRequest& request) {
  std::vector<int64_t> totals;
  ExpertTotals(request, totals);
  return totals;
}

std::vector<int64_t> RankLoadsBefore(const PlanRequest& request) { return HomeLoads(request, ExpertTotals(request)); }

std::vector<int64_t> HomeLoads(const PlanRequest& request, std::span<const int64_t> expert_totals) {
  std::vector<int64_t> loads(static_cast<size_t>(request.ranks()), 0);
  for (int e = 0; e < request.experts(); ++e) loads[request.home_of(e)] += expert_totals[e];
  return loads;
}

void MoveGuestTokens(const PlanRequest& request, const Plan& plan, std::span<int64_t> rank_loads) {
  for (const Assignment& a : plan.assignments) {
    rank_loads[request.home_of(a.expert)] -= a.tokens;
    rank_loads[a.rank] += a.tokens;
  }
}

std::vector<int64_t> RankLoadsAfter(const PlanRequest& request, const Plan& plan) {
  std::vector<int64_t> loads = RankLoadsBefore(request);
  MoveGuestTokens(request, plan, loads);
  return loads;
}

double ImbalancePct(std::span<const int64_t> rank_loads) {
  if (rank_loads.empty()) return 0;
  int64_t total = 0;
  int64_t max_load = 0;
  for (int64_t l : rank_loads) {
    total += l;
    max_load = std::max(max_load, l);
  }
  if (total == 0) return 0;
  const double mean = static_cast<double>(total) / static_cast<double>(rank_loads.size());
  return (static_cast<double>(max_load) - mean) / mean * 100.0;
}

int64_t LoadCap(int64_t total_tokens, int ranks, double target_imbalance_pct) {
  const int64_t ceil_mean = (total_tokens + ranks - 1) / ranks;
  // The small absolute slack keeps a cap that is a whole number in exact arithmetic (e.g. 102
  // for a mean of 100 at 2%) from rounding down to 101 through the division.
  const double target =
      static_cast<double>(total_tokens) * (1.0 + target_imbalance_pct / 100.0) / static_cast<double>(ranks);
  const auto target_cap = static_cast<int64_t>(std::floor(target + 1e-6));
  return std::max(ceil_mean, target_cap);
}

}  // namespace taot

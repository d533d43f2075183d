// LLEP, least-loaded expert parallelism (Salesforce), re-implemented from its description
// (BACKGROUND.md §3): experts in decreasing load (LPT); the home GPU takes an expert's tokens up
// to cap = capacity_factor x mean; the overflow goes, in chunks of at least `min_chunk` tokens
// (a GEMM worth launching), to the currently least-loaded GPU. Topology-agnostic.
//
// Our reading where the description is silent: a chunk fills the receiver up to the cap (but is
// never smaller than min_chunk); receivers need a free guest slot and must not already hold the
// expert; when no receiver is left, the rest stays home.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "planners/builtin.h"
#include "planners/params.h"
#include "planners/plan_building.h"

namespace taot::planners {
namespace {

class LlepPlanner final : public Planner {
 public:
  LlepPlanner(double capacity_factor, int64_t min_chunk) : capacity_factor_(capacity_factor), min_chunk_(min_chunk) {}
  std::string_view name() const override { return "llep"; }
  absl::StatusOr<Plan> MakePlan(const PlanRequest& request) override;

 private:
  double capacity_factor_;
  int64_t min_chunk_;
};

absl::StatusOr<Plan> LlepPlanner::MakePlan(const PlanRequest& request) {
  const LoadSums sums = SumLoads(request);
  const int R = request.ranks();
  const auto cap =
      static_cast<int64_t>(std::floor(capacity_factor_ * static_cast<double>(sums.total) / static_cast<double>(R)));
  std::vector<int64_t> load(static_cast<size_t>(R), 0);
  std::vector<int> free_slots(static_cast<size_t>(R), request.slots_per_rank());
  std::vector<GuestShare> shares;

  std::vector<int> order(static_cast<size_t>(request.experts()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return sums.expert_totals[a] > sums.expert_totals[b]; });
  for (int e : order) {
    const int home = request.home_of(e);
    const int64_t take = std::min(sums.expert_totals[e], std::max<int64_t>(0, cap - load[home]));
    load[home] += take;
    int64_t overflow = sums.expert_totals[e] - take;
    std::vector<char> holds(static_cast<size_t>(R), 0);
    while (overflow > 0) {
      int guest = -1;
      for (int r = 0; r < R; ++r) {
        if (r == home || free_slots[r] == 0 || holds[r]) continue;
        if (guest < 0 || load[r] < load[guest]) guest = r;
      }
      if (guest < 0) {
        load[home] += overflow;
        break;
      }
      const int64_t chunk = std::min(overflow, std::max(cap - load[guest], min_chunk_));
      shares.push_back({e, guest, chunk});
      holds[guest] = 1;
      --free_slots[guest];
      load[guest] += chunk;
      overflow -= chunk;
    }
  }
  Plan plan;
  AppendSlicedShares(request, shares, plan);
  return plan;
}

}  // namespace

PlannerOr MakeLlep(const PlannerParams& params) {
  ParamReader reader("llep", params);
  const double factor = reader.Double("capacity_factor", 1.1, 1.0, 100.0);
  const int64_t min_chunk = reader.Int("min_chunk", 128, 1, int64_t{1} << 40);
  if (absl::Status s = reader.Finish(); !s.ok()) return s;
  return std::make_unique<LlepPlanner>(factor, min_chunk);
}

}  // namespace taot::planners

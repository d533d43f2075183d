// ECHO, re-implemented from its description (NVIDIA Megatron-LM draft PR, BACKGROUND.md §3):
// per microbatch and layer, the tokens a rank holds above the mean spill greedily into spare
// guest slots of the ranks below the mean. Topology-agnostic: every guest is as good as another.
//
// Our reading: hot ranks in decreasing load; a hot rank's spill (load - ceil(mean)) comes
// from its heaviest experts first; each piece goes to the rank with the most room below the
// mean that has a free slot (ties to the lower rank), as much as fits there.
#include <algorithm>
#include <numeric>

#include "planners/builtin.h"
#include "planners/params.h"
#include "planners/plan_building.h"

namespace taot::planners {
namespace {

class EchoPlanner final : public Planner {
 public:
  std::string_view name() const override { return "echo"; }
  absl::StatusOr<Plan> MakePlan(const PlanRequest& request) override;
};

absl::StatusOr<Plan> EchoPlanner::MakePlan(const PlanRequest& request) {
  const LoadSums sums = SumLoads(request);
  const int R = request.ranks();
  const int per_rank = request.experts_per_rank();
  const int64_t mean = (sums.total + R - 1) / R;
  std::vector<int64_t> load = sums.rank_loads;
  std::vector<int> free_slots(static_cast<size_t>(R), request.slots_per_rank());
  std::vector<GuestShare> shares;

  std::vector<int> hot(static_cast<size_t>(R));
  std::iota(hot.begin(), hot.end(), 0);
  std::stable_sort(hot.begin(), hot.end(), [&](int a, int b) { return load[a] > load[b]; });
  for (int h : hot) {
    int64_t spill = load[h] - mean;
    if (spill <= 0) break;
    std::vector<int> experts(static_cast<size_t>(per_rank));
    std::iota(experts.begin(), experts.end(), h * per_rank);
    std::stable_sort(experts.begin(), experts.end(),
                     [&](int a, int b) { return sums.expert_totals[a] > sums.expert_totals[b]; });
    for (int e : experts) {
      int64_t piece = std::min(sums.expert_totals[e], spill);
      while (piece > 0) {
        int guest = -1;
        for (int r = 0; r < R; ++r) {
          if (r == h || free_slots[r] == 0 || load[r] >= mean) continue;
          if (guest < 0 || load[r] < load[guest]) guest = r;
        }
        if (guest < 0) break;
        const int64_t amount = std::min(piece, mean - load[guest]);
        shares.push_back({e, guest, amount});
        --free_slots[guest];
        load[guest] += amount;
        load[h] -= amount;
        piece -= amount;
        spill -= amount;
      }
      if (spill <= 0) break;
    }
  }
  Plan plan;
  AppendSlicedShares(request, shares, plan);
  return plan;
}

}  // namespace

PlannerOr MakeEcho(const PlannerParams& params) {
  ParamReader reader("echo", params);
  if (absl::Status s = reader.Finish(); !s.ok()) return s;
  return std::make_unique<EchoPlanner>();
}

}  // namespace taot::planners

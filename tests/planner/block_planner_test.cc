// taot-block's shared source (taot/planner/block_planner.h) on the CPU: a block of any number of
// threads plans what one thread plans (its parallel part is integer sums over disjoint shares),
// and the plan comes out in canonical order.
#include "taot/planner/block_planner.h"

#include <gtest/gtest.h>

#include "taot/planner/block_host.h"
#include "taot/planner/load_stats.h"
#include "taot/sim/case_generator.h"
#include "taot/sim/workload_families.h"

namespace taot {
namespace {

TEST(BlockPlannerTest, AnyNumberOfThreadsPlansWhatOneThreadPlans) {
  int replicated = 0;
  for (const sim::WorkloadFamily& family : sim::WorkloadFamilies(32)) {
    sim::CaseOptions o;
    o.ranks = 32;
    o.experts = 128;
    family.apply(o);
    const PlanRequest request = sim::GenerateCase(o).value().request;
    int64_t total = 0;
    for (int r = 0; r < request.ranks(); ++r) {
      for (int64_t v : request.load.row(r)) total += v;
    }
    const int64_t cap = LoadCap(total, request.ranks(), 2.0);
    BlockHostLayer one, many;
    one.Prepare(request.problem);
    one.Plan(request.load, cap);
    const Plan want = one.ToPlan();
    Plan canonical = want;
    Canonicalize(canonical);
    EXPECT_EQ(want, canonical) << family.name << ": ToPlan's order is the canonical one";
    many.Prepare(request.problem);
    for (int threads : {2, 7, 32, 256}) {
      many.Plan(request.load, cap, {}, threads);
      EXPECT_EQ(many.ToPlan(), want) << family.name << ", " << threads << " threads";
      EXPECT_EQ(many.max_load(), one.max_load());
    }
    replicated += !want.replicas.empty();
  }
  EXPECT_GE(replicated, 11) << "all but the uniform family need replicas at 2%";
}

}  // namespace
}  // namespace taot

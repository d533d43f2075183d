#include "planners/taot_placement.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "generated_cases.h"
#include "taot/planner/load_stats.h"

namespace taot::planners {
namespace {

// Every piece of the plan's replicas, as the next microbatch finds them in place.
std::vector<Replica> ResidentFrom(const std::vector<Piece>& pieces) {
  std::vector<Replica> resident;
  for (const Piece& p : pieces) resident.push_back({p.expert, p.rank});
  return resident;
}

// A later pass that starts from the state the first pass recorded after their shared nodes
// must plan exactly as it would from the start: over the workload families (zipf-like, bursts
// of 1, 3 and R/8 experts 10x and 30x hotter), K 1/2/4, three caps, alone and with the
// replicas of the plan before in place.
TEST(PlacementTest, ALaterPassStartingAfterTheSharedNodesPlansAsOneFromTheStart) {
  struct Family {
    double imbalance;
    int hot;
    double factor;
  };
  int shared = 0, compared = 0;
  for (const int ranks : {16, 64}) {
    const Family families[] = {{0.3, 0, 10}, {0.7, 0, 10}, {0, 1, 10},         {0, 1, 30},
                               {0, 3, 10},   {0, 3, 30},   {0, ranks / 8, 10}, {0, ranks / 8, 30}};
    for (const int slots : {1, 2, 4}) {
      for (const Family& f : families) {
        for (const bool resident : {false, true}) {
          PlanRequest r = testing::Generated(ranks, 4 * ranks, f.imbalance, f.hot, f.factor, 1, slots);
          const LoadSums first_sums = SumLoads(r);
          for (const double target : {2.0, 5.0, 10.0}) {
            const std::string where = absl::StrCat("EP", ranks, " K", slots, " imbalance ", f.imbalance, " hot ", f.hot,
                                                   " x", f.factor, " target ", target, " resident ", resident);
            PlanRequest request = r;
            if (resident) {
              // The plan of the family's next seed leaves its replicas for this one.
              const PlanRequest before = testing::Generated(ranks, 4 * ranks, f.imbalance, f.hot, f.factor, 2, slots);
              const LoadSums before_sums = SumLoads(before);
              Placement previous;
              previous.Prepare(before, before_sums);
              std::vector<Piece> pieces;
              previous.Place(LoadCap(before_sums.total, ranks, target), pieces);
              request.resident = ResidentFrom(pieces);
            }
            const LoadSums sums = SumLoads(request);
            const int64_t cap = LoadCap(sums.total, ranks, target);
            Placement sharing, alone;
            alone.set_share_start(false);
            sharing.Prepare(request, sums);
            alone.Prepare(request, sums);
            std::vector<Piece> with_shared, without;
            const bool met = sharing.Place(cap, with_shared);
            EXPECT_EQ(met, alone.Place(cap, without)) << where;
            ASSERT_EQ(with_shared.size(), without.size()) << where;
            for (size_t i = 0; i < without.size(); ++i) {
              EXPECT_EQ(std::tie(with_shared[i].expert, with_shared[i].rank, with_shared[i].tokens),
                        std::tie(without[i].expert, without[i].rank, without[i].tokens))
                  << where << ", piece " << i;
            }
            EXPECT_EQ(alone.shared_nodes(), 0u) << where;
            shared += sharing.shared_nodes() > 0;
            ++compared;
          }
        }
      }
    }
  }
  // Most cases share some nodes; the comparison is not empty.
  EXPECT_EQ(compared, 2 * 3 * 8 * 2 * 3);
  EXPECT_GE(shared, compared / 3);
}

}  // namespace
}  // namespace taot::planners

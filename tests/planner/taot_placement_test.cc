#include "planners/taot_placement.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "generated_cases.h"
#include "placement_testing.h"
#include "taot/planner/case_json.h"
#include "taot/planner/load_stats.h"
#include "test_requests.h"

namespace taot::planners {
namespace {

// Every piece of the plan's replicas, as the next microbatch finds them in place.
std::vector<Replica> ResidentFrom(const std::vector<Piece>& pieces) {
  std::vector<Replica> resident;
  for (const Piece& p : pieces) resident.push_back({p.expert, p.rank});
  return resident;
}

// What a placement made of `request` at `cap`.
struct Placed {
  std::vector<Piece> pieces;
  bool met = false;
};

Placed PlaceWith(Placement& placement, const PlanRequest& request, int64_t cap) {
  const LoadSums sums = SumLoads(request);
  placement.Prepare(request, sums);
  Placed placed;
  placed.met = placement.Place(cap, placed.pieces);
  return placed;
}

void ExpectSamePlaced(const Placed& a, const Placed& b, const std::string& where) {
  EXPECT_EQ(a.met, b.met) << where;
  ASSERT_EQ(a.pieces.size(), b.pieces.size()) << where;
  for (size_t i = 0; i < a.pieces.size(); ++i) {
    EXPECT_EQ(std::tie(a.pieces[i].expert, a.pieces[i].rank, a.pieces[i].tokens),
              std::tie(b.pieces[i].expert, b.pieces[i].rank, b.pieces[i].tokens))
        << where << ", piece " << i;
  }
}

// Whether the placement plans `request` at `cap` the same with the shared start and without.
void ExpectSameWithAndWithoutSharing(const PlanRequest& request, int64_t cap, const std::string& where, int* shared) {
  Placement sharing, alone;
  alone.set_share_start(false);
  ExpectSamePlaced(PlaceWith(sharing, request, cap), PlaceWith(alone, request, cap), where);
  EXPECT_EQ(alone.shared_nodes(), 0u) << where;
  *shared += sharing.shared_nodes() > 0;
}

// A random skewed request of `seed` and its cap: 2 to 4 ranks a node, 2 to 5 nodes, K 1 to 3,
// caps 0-15% over the mean.
std::pair<PlanRequest, int64_t> RandomCase(uint64_t seed) {
  const int per_node = 2 + static_cast<int>(seed % 3);
  const int ranks = per_node * (2 + static_cast<int>((seed / 3) % 4));
  const int slots = 1 + static_cast<int>((seed / 12) % 3);
  PlanRequest request = taot::testing::RandomRequest(ranks, 4 * ranks, slots, seed, per_node);
  const int64_t cap = LoadCap(SumLoads(request).total, ranks, static_cast<double>((seed / 36) % 6) * 3.0);
  return {std::move(request), cap};
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
          PlanRequest r = taot::testing::Generated(ranks, 4 * ranks, f.imbalance, f.hot, f.factor, 1, slots);
          for (const double target : {2.0, 5.0, 10.0}) {
            const std::string where = absl::StrCat("EP", ranks, " K", slots, " imbalance ", f.imbalance, " hot ", f.hot,
                                                   " x", f.factor, " target ", target, " resident ", resident);
            PlanRequest request = r;
            if (resident) {
              // The plan of the family's next seed leaves its replicas for this one.
              const PlanRequest before =
                  taot::testing::Generated(ranks, 4 * ranks, f.imbalance, f.hot, f.factor, 2, slots);
              const LoadSums before_sums = SumLoads(before);
              Placement previous;
              previous.Prepare(before, before_sums);
              std::vector<Piece> pieces;
              previous.Place(LoadCap(before_sums.total, ranks, target), pieces);
              request.resident = ResidentFrom(pieces);
            }
            const int64_t cap = LoadCap(SumLoads(request).total, ranks, target);
            ExpectSameWithAndWithoutSharing(request, cap, where, &shared);
            ++compared;
          }
        }
      }
    }
  }
  // A third of the cases or more share some nodes; the comparison is not empty.
  EXPECT_EQ(compared, 2 * 3 * 8 * 2 * 3);
  EXPECT_GE(shared, compared / 3);
}

// The same on RandomCase's requests. Seeds past 20,000 are those (of 100,000) where a shared node
// reaches the later pass's bound, which then covers the shared nodes itself.
TEST(PlacementTest, ALaterPassPlansAsOneFromTheStartOnRandomRequests) {
  std::vector<uint64_t> seeds;
  for (uint64_t seed = 0; seed < 2000; ++seed) seeds.push_back(seed);
  for (const uint64_t seed : {23723, 28073, 29537, 31853, 56096, 68687, 76595, 92129, 93443, 94097}) {
    seeds.push_back(seed);
  }
  int shared = 0;
  for (const uint64_t seed : seeds) {
    const auto [r, cap] = RandomCase(seed);
    ExpectSameWithAndWithoutSharing(r, cap, absl::StrCat("seed ", seed), &shared);
  }
  EXPECT_GE(shared, static_cast<int>(seeds.size()) / 3);
}

// Whether `placed` is a placement of `request` at `cap`: no rank over it where met, at most K
// pieces a rank, none on its expert's home, no expert sending more than it has.
void ExpectValidPlaced(const PlanRequest& request, int64_t cap, const Placed& placed, const std::string& where) {
  const std::vector<int64_t> totals = ExpertTotals(request);
  std::vector<int64_t> loads = RankLoadsBefore(request), sent(totals.size(), 0);
  std::vector<int> pieces(loads.size(), 0);
  for (const Piece& p : placed.pieces) {
    ASSERT_NE(request.home_of(p.expert), p.rank) << where;
    loads[request.home_of(p.expert)] -= p.tokens;
    loads[p.rank] += p.tokens;
    sent[p.expert] += p.tokens;
    ++pieces[p.rank];
  }
  for (size_t r = 0; r < loads.size(); ++r) {
    if (placed.met) {
      EXPECT_LE(loads[r], cap) << where << ", rank " << r;
    }
    EXPECT_LE(pieces[r], request.slots_per_rank()) << where << ", rank " << r;
  }
  for (size_t e = 0; e < totals.size(); ++e) EXPECT_LE(sent[e], totals[e]) << where << ", expert " << e;
}

// With every first handoff undone (HandoffFirst::kUndone), the placement must plan as one that
// makes none (kOff): the node goes on from its start, and weighs the handoff again where it
// would be kept. Counts the requests where first handoffs were made.
void ExpectUndoneFirstHandoffsChangeNothing(const PlanRequest& request, int64_t cap, const std::string& where,
                                            int* made) {
  Placement undone, off;
  undone.set_handoff_first(Placement::HandoffFirst::kUndone);
  off.set_handoff_first(Placement::HandoffFirst::kOff);
  ExpectSamePlaced(PlaceWith(undone, request, cap), PlaceWith(off, request, cap), where);
  EXPECT_EQ(off.first_handoffs().made, 0) << where;
  // Kept where they cover (the default), the first handoffs leave a valid placement, and the
  // node each covers ends as any other (its bins back in the state's index).
  Placement first;
  ExpectValidPlaced(request, cap, PlaceWith(first, request, cap), where);
  if (first.state().tree()) {
    EXPECT_EQ(first.state().open_bins(), testing::OpenBins(first.state())) << where;
  }
  EXPECT_EQ(undone.first_handoffs().covered, 0) << where;
  *made += undone.first_handoffs().made > 0;
}

// Over the burst families (1, 3 and R/8 experts 10x and 30x hotter; EP16/64/256, K 1/2/4, two
// seeds, three caps).
TEST(PlacementTest, AFirstHandoffUndoneLeavesTheNodeAsItWas) {
  int made = 0, compared = 0;
  for (const int ranks : {16, 64, 256}) {
    for (const int slots : {1, 2, 4}) {
      for (const int hot : {1, 3, ranks / 8}) {
        for (const double factor : {10.0, 30.0}) {
          for (const uint64_t seed : {1, 2}) {
            const PlanRequest r = taot::testing::Generated(ranks, 4 * ranks, 0, hot, factor, seed, slots);
            for (const double target : {2.0, 5.0, 10.0}) {
              ExpectUndoneFirstHandoffsChangeNothing(r, LoadCap(SumLoads(r).total, ranks, target),
                                                     absl::StrCat("EP", ranks, " K", slots, " hot ", hot, " x", factor,
                                                                  " seed ", seed, " target ", target),
                                                     &made);
              ++compared;
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(compared, 3 * 3 * 3 * 2 * 2 * 3);
  EXPECT_GE(made, compared / 2);  // 285 when written
}

// The same on RandomCase's requests.
TEST(PlacementTest, AFirstHandoffUndoneLeavesTheNodeAsItWasOnRandomRequests) {
  int made = 0;
  for (uint64_t seed = 0; seed < 20000; ++seed) {
    const auto [r, cap] = RandomCase(seed);
    ExpectUndoneFirstHandoffsChangeNothing(r, cap, absl::StrCat("seed ", seed), &made);
  }
  EXPECT_GE(made, 5000);  // 9,051 when written
}

// One of the simulator's EP128 requests (a drifting zipf-like load, one expert a rank; the
// overhead experiment's): a node that could hand off first, but whose excess one bin elsewhere
// takes, covers itself with one crossing and tries no carriers. Made first there, the handoff
// cost this request 6% more (97 -> 103 over its plan), so such a node does not make it first.
TEST(PlacementTest, AFirstHandoffMakesNoSimulatorRequestDearer) {
  std::ifstream in(TAOT_TEST_DATA_DIR "/sim_ep128_request.json");
  ASSERT_TRUE(in.good());
  std::stringstream json;
  json << in.rdbuf();
  const absl::StatusOr<PlanRequest> request = ParseCase(json.str());
  ASSERT_TRUE(request.ok()) << request.status();
  const int64_t cap = LoadCap(SumLoads(*request).total, request->ranks(), 2.0);
  Placement first, off;
  off.set_handoff_first(Placement::HandoffFirst::kOff);
  const Placed with_first = PlaceWith(first, *request, cap), without = PlaceWith(off, *request, cap);
  ASSERT_TRUE(with_first.met && without.met);
  auto cost = [&](const Placed& placed) {
    double sum = 0;
    for (const Piece& p : placed.pieces) sum += request->topology().cost(request->home_of(p.expert), p.rank);
    return sum;
  };
  EXPECT_LE(cost(with_first), cost(without));
}

}  // namespace
}  // namespace taot::planners

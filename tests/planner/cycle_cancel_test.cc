#include "planners/cycle_cancel.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <random>
#include <tuple>
#include <vector>

#include "taot/planner/load_stats.h"
#include "test_requests.h"

namespace taot::planners {
namespace {

std::vector<int64_t> Loads(const PlanRequest& r, const std::vector<GuestShare>& pieces) {
  std::vector<int64_t> loads = RankLoadsBefore(r);
  for (const GuestShare& p : pieces) {
    loads[r.home_of(p.expert)] -= p.tokens;
    loads[p.rank] += p.tokens;
  }
  return loads;
}

double Cost(const PlanRequest& r, const std::vector<GuestShare>& pieces) {
  double c = 0;
  for (const GuestShare& p : pieces) c += r.topology().cost(r.home_of(p.expert), p.rank);
  return c;
}

TEST(CycleCancellerTest, TwoExpertsOfOneRankOnOneGuestBecomeOne) {
  const PlanRequest r = taot::testing::MakeRequest(2, 4, 2, {{50, 50, 0, 0}});
  std::vector<GuestShare> pieces = {{0, 1, 20}, {1, 1, 10}};
  CycleCanceller().Cancel(r, ExpertTotals(r), {}, pieces);
  ASSERT_EQ(pieces.size(), 1u);
  EXPECT_EQ(pieces[0].tokens, 30);
  EXPECT_EQ(Loads(r, pieces), (std::vector<int64_t>{70, 30}));
}

TEST(CycleCancellerTest, ACycleThroughEveryRankIsCancelledInAnyOrderAndAForestIsLeftAsItIs) {
  // Four ranks of two experts each; each rank's first expert has a piece on the next rank: a
  // cycle 0 -> 1 -> 2 -> 3 -> 0 that only the last of the four pieces, in any order, closes.
  const PlanRequest r = taot::testing::MakeRequest(4, 8, 2, {{40, 40, 40, 40, 40, 40, 40, 40}}, 2);
  const std::vector<GuestShare> ring = {{0, 1, 10}, {2, 2, 12}, {4, 3, 14}, {6, 0, 16}};
  for (size_t first = 0; first < ring.size(); ++first) {
    std::vector<GuestShare> pieces(ring.begin() + static_cast<std::ptrdiff_t>(first), ring.end());
    pieces.insert(pieces.end(), ring.begin(), ring.begin() + static_cast<std::ptrdiff_t>(first));
    const std::vector<int64_t> before = Loads(r, pieces);
    CycleCanceller().Cancel(r, ExpertTotals(r), {}, pieces);
    EXPECT_EQ(pieces.size(), 3u) << "first " << first;
    EXPECT_EQ(Loads(r, pieces), before) << "first " << first;
  }
  std::vector<GuestShare> forest(ring.begin(), ring.end() - 1);
  CycleCanceller().Cancel(r, ExpertTotals(r), {}, forest);
  ASSERT_EQ(forest.size(), 3u);
  for (size_t i = 0; i < forest.size(); ++i) {
    EXPECT_EQ(std::tie(forest[i].expert, forest[i].rank, forest[i].tokens),
              std::tie(ring[i].expert, ring[i].rank, ring[i].tokens));
  }
}

TEST(CycleCancellerTest, KeepsEveryLoadAndNeverAddsCost) {
  std::mt19937_64 rng(5);
  int removed = 0;
  for (int round = 0; round < 200; ++round) {
    const PlanRequest r = taot::testing::RandomRequest(8, 16, 3, rng(), /*ranks_per_node=*/4);
    const std::vector<int64_t> totals = ExpertTotals(r);
    std::vector<int64_t> left = totals;
    std::vector<GuestShare> pieces;
    std::vector<int> slots(8, 3);
    for (int k = 0; k < 12; ++k) {
      const int e = static_cast<int>(rng() % 16), g = static_cast<int>(rng() % 8);
      if (g == r.home_of(e) || slots[g] == 0 || left[e] < 2) continue;
      bool dup = false;
      for (const GuestShare& p : pieces) dup |= p.expert == e && p.rank == g;
      if (dup) continue;
      const int64_t amount = 1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(left[e] - 1));
      pieces.push_back({e, g, amount});
      left[e] -= amount;
      --slots[g];
    }
    const std::vector<int64_t> before = Loads(r, pieces);
    const double cost_before = Cost(r, pieces);
    const size_t count_before = pieces.size();
    CycleCanceller().Cancel(r, totals, {}, pieces);
    EXPECT_EQ(Loads(r, pieces), before) << "round " << round;
    EXPECT_LE(Cost(r, pieces), cost_before);
    std::vector<int64_t> sent(16, 0);
    for (const GuestShare& p : pieces) {
      EXPECT_GT(p.tokens, 0);
      sent[p.expert] += p.tokens;
    }
    for (int e = 0; e < 16; ++e) EXPECT_LE(sent[e], totals[e]);
    removed += static_cast<int>(count_before - pieces.size());
  }
  EXPECT_GT(removed, 20);  // the random piece sets do have cycles
}

}  // namespace
}  // namespace taot::planners

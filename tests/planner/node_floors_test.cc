#include "planners/node_floors.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "placement_testing.h"
#include "planners/greedy_covers.h"
#include "planners/taot_placement.h"
#include "taot/planner/load_stats.h"

namespace taot::planners {
namespace {

using testing::BoundState;
using testing::OneRow;

// Nodes {0, 1, 2} and {3, 4, 5}, two experts per rank. At cap 50 rank 0 (70 + 30) sheds 50 and
// rank 1 (60) sheds 10: 60 over the 40 of room left in their node, on rank 2.
PlanRequest TwoHotRanks() { return OneRow(6, 12, 2, {70, 30, 60, 0, 10, 0, 0, 0, 0, 0, 5, 0}, 3); }

std::vector<double> Floors(const PlanRequest& request, int64_t cap) {
  BoundState b(request, cap);
  std::vector<double> floors;
  NodeFloors(b.state, floors);
  return floors;
}

TEST(NodeFloorsTest, EachHotRankPaysAPieceAndANodeOverItsRoomACrossing) {
  // Two intra-node pieces at least, and one of them (or a costlier piece) crosses: 1 + 1 + 2.
  EXPECT_EQ(Floors(TwoHotRanks(), 50), (std::vector<double>{4.0, 0.0}));
  // At cap 55 rank 0 sheds 45 and rank 1 sheds 5, one more than rank 2's room: still a crossing.
  EXPECT_EQ(Floors(TwoHotRanks(), 55), (std::vector<double>{4.0, 0.0}));
  // At cap 60 only rank 0 is hot, and its 40 fit the 50 of room on rank 2.
  EXPECT_EQ(Floors(TwoHotRanks(), 60), (std::vector<double>{1.0, 0.0}));
}

TEST(NodeFloorsTest, AResidentReplicaMayTakeARanksSurplusForFree) {
  PlanRequest r = TwoHotRanks();
  r.resident = {{2, 4}};  // rank 1's expert on rank 4: its surplus may go there at no cost
  // Rank 0 still pays a piece; the crossing may be the free replica, so it is not counted.
  EXPECT_EQ(Floors(r, 50), (std::vector<double>{1.0, 0.0}));
}

TEST(NodeFloorsTest, AGeneralCostMatrixKeepsNoFloor) {
  const PlanRequest r = testing::OnRandomMatrix(TwoHotRanks(), 3, 7);
  EXPECT_EQ(Floors(r, 50), (std::vector<double>{0.0, 0.0}));
}

// A few resident replicas, each on a rank other than its expert's home, at most one a rank.
PlanRequest WithResidents(PlanRequest r, std::mt19937_64& rng) {
  const int R = r.ranks(), E = r.experts();
  for (int rank = 0; rank < R; ++rank) {
    if (rng() % 3 != 0) continue;
    const int e = static_cast<int>(rng() % static_cast<uint64_t>(E));
    if (r.home_of(e) != rank) r.resident.push_back({e, rank});
  }
  return r;
}

// The floors are what the whole placement's pieces from each node cost at least, on random
// cases (skewed, bursts through the heavy experts, with and without resident replicas): a floor
// above that would stop a pass that could still win.
TEST(NodeFloorsTest, NoPlacementCostsANodeLessThanItsFloor) {
  int checked = 0, crossings = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    std::mt19937_64 rng(seed);
    const int ranks = 8 * (2 + static_cast<int>(seed % 3)), slots = 1 + static_cast<int>(seed % 3);
    PlanRequest r = taot::testing::RandomRequest(ranks, 4 * ranks, slots, seed, 4);
    if (seed % 2 == 1) r = WithResidents(std::move(r), rng);
    const LoadSums sums = SumLoads(r);
    const int64_t cap = LoadCap(sums.total, ranks, static_cast<double>(seed % 4) * 3.0);

    BoundState after_step_1(r, cap);
    UseResident(after_step_1.state);
    std::vector<double> floors;
    NodeFloors(after_step_1.state, floors);

    Placement placement;
    placement.Prepare(r, sums);
    std::vector<Piece> pieces;
    if (!placement.Place(cap, pieces)) continue;
    const PlacementState& s = after_step_1.state;
    std::vector<double> paid(floors.size(), 0.0);
    for (const Piece& p : pieces) {
      const int home = s.home_of(p.expert);
      paid[r.topology().node_of(home)] += s.PieceCost(home, p.expert, p.rank);
    }
    for (int n = 0; n < static_cast<int>(floors.size()); ++n) {
      EXPECT_GE(paid[n], floors[n]) << "seed " << seed << " node " << n;
      int hot = 0;
      for (int rank : r.topology().ranks_of_node(n)) hot += s.surplus(rank) > 0;
      crossings += floors[n] > hot;  // the floor counts a crossing (intra-node pieces cost 1)
    }
    ++checked;
  }
  // Both parts of the floor are held to the placements, many times.
  EXPECT_GE(checked, 150);
  EXPECT_GE(crossings, 50);
}

}  // namespace
}  // namespace taot::planners

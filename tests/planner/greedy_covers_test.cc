#include "planners/greedy_covers.h"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "placement_testing.h"

namespace taot::planners {
namespace {

using testing::BoundState;
using testing::OneRow;
using testing::Triples;
using Pieces = std::vector<std::tuple<int, int, int64_t>>;

// Nodes {0, 1, 2} and {3, 4, 5}; rank 0 holds experts of 70 and 30 tokens; at cap 50 it must
// shed 50, and the rooms are 40 30 | 30 30 45.
PlanRequest HotRankZero(int slots = 2) { return OneRow(6, 12, slots, {70, 30, 10, 0, 20, 0, 20, 0, 20, 0, 5, 0}, 3); }

TEST(GreedyCoversTest, CoverRankPutsTheBiggestExpertIntoTheBestFittingBinUntilCovered) {
  BoundState inside(HotRankZero(), 50);
  CoverRank(inside.state, 0, Scope::kSameNode);
  // No bin of the node takes 50: the roomiest takes 40, then 10 fit tightest into rank 2.
  EXPECT_EQ(Triples(inside.state.pieces()), (Pieces{{0, 1, 40}, {0, 2, 10}}));
  EXPECT_EQ(inside.state.surplus(0), 0);
  EXPECT_EQ(inside.state.cost(), 2.0);

  BoundState across(HotRankZero(), 50);
  CoverRank(across.state, 0, Scope::kOtherNodes);
  // Nothing across takes 50: the roomiest takes 45; then expert 1 is the bigger one left.
  EXPECT_EQ(Triples(across.state.pieces()), (Pieces{{0, 5, 45}, {1, 3, 5}}));
  EXPECT_EQ(across.state.cost(), 6.0);
}

TEST(GreedyCoversTest, CoverRankGrowsPiecesItHasBeforeAddingNewOnes) {
  BoundState b(HotRankZero(), 50);
  b.state.AddPiece(0, 1, 4, 5);
  b.state.AddPiece(0, 0, 5, 5);
  CoverRank(b.state, 0, Scope::kOtherNodes);
  // Both pieces grow (free), in the order they were made, before anything new is placed:
  // expert 1 is used up, expert 0's piece takes the rest.
  EXPECT_EQ(Triples(b.state.pieces()), (Pieces{{1, 4, 30}, {0, 5, 20}}));
  EXPECT_EQ(b.state.surplus(0), 0);
  EXPECT_EQ(b.state.cost(), 6.0);
}

TEST(GreedyCoversTest, PlaceWholeOnlyPlacesOnePieceThatFinishesTheRank) {
  BoundState tight(HotRankZero(), 50);  // 50 fits no bin of the node
  PlaceWhole(tight.state, 0);
  EXPECT_TRUE(tight.state.pieces().empty());

  BoundState roomy(HotRankZero(), 65);  // 35 to shed; rooms 55 and 45 in the node
  PlaceWhole(roomy.state, 0);
  EXPECT_EQ(Triples(roomy.state.pieces()), (Pieces{{0, 2, 35}}));  // the tightest that fits

  // Three experts of 30: none holds a surplus of 40 alone, though a bin would.
  BoundState small(OneRow(4, 12, 2, {30, 30, 30}, 2), 50);
  PlaceWhole(small.state, 0);
  EXPECT_TRUE(small.state.pieces().empty());
}

TEST(GreedyCoversTest, ExportTurnsWhatExceedsTheSurplusIntoRoomOnTheHome) {
  BoundState b(HotRankZero(), 90);  // rank 0 sheds 10
  Export(b.state, 0, 0, 3, 60);
  EXPECT_EQ(b.state.surplus(0), 0);
  EXPECT_EQ(b.state.spare(0), 50);
  EXPECT_EQ(b.state.spare(3), 10);
}

TEST(GreedyCoversTest, UseResidentPlacesOnResidentReplicasForFree) {
  PlanRequest r = HotRankZero();
  r.resident = {{0, 4}, {2, 0}};  // the second cannot help: rank 1 is not hot
  BoundState b(std::move(r), 50);
  UseResident(b.state);
  EXPECT_EQ(Triples(b.state.pieces()), (Pieces{{0, 4, 30}}));
  EXPECT_EQ(b.state.cost(), 0.0);
  EXPECT_EQ(b.state.surplus(0), 20);
}

TEST(GreedyCoversTest, AbsorbCrumbsMovesRoomStuckInAFullRankToTheHomeOfItsPiece) {
  // Two nodes of two ranks, K = 1; rank 2 sheds 10, rank 3 has 15 of room.
  BoundState b(OneRow(4, 8, 1, {30, 20, 10, 5, 40, 0, 0, 15}, 2), 30);
  PlacementState& s = b.state;
  s.AddPiece(2, 4, 3, 5);  // rank 3's only slot, 10 of room left there
  AbsorbCrumbs(s);
  EXPECT_EQ(Triples(s.pieces()), (Pieces{{4, 3, 15}}));
  EXPECT_EQ(s.spare(3), 0);
  EXPECT_EQ(s.surplus(2), 0);
  EXPECT_EQ(s.spare(2), 5);  // rank 2 has a free slot: the room now sits there
}

}  // namespace
}  // namespace taot::planners

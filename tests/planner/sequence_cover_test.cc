#include "planners/sequence_cover.h"

#include <gtest/gtest.h>

#include <numeric>
#include <tuple>
#include <vector>

#include "placement_testing.h"

namespace taot::planners {
namespace {

using testing::BoundState;
using testing::OneRow;
using testing::RandomState;
using testing::Triples;
using Order = SequenceCover::Order;
using Pieces = std::vector<std::tuple<int, int, int64_t>>;

// One node of four ranks with no slack: ranks 0 and 1 shed 30 and 10, ranks 2 and 3 have 25
// and 15 of room.
PlanRequest NoSlack() { return OneRow(4, 8, 2, {20, 40, 40, 0, 5, 0, 15, 0}, 4); }

TEST(SequenceCoverTest, InRankOrderEachPieceFinishesARankFillsABinOrUsesUpAnExpert) {
  BoundState b(NoSlack(), 30);
  SequenceCover cover;
  cover.Cover(b.state, {0}, {Order::kRankOrder, false, false});
  // Rank 0's biggest expert fills rank 2; its other expert, now the bigger, finishes it on
  // rank 3; rank 1 takes the rest of rank 3.
  EXPECT_EQ(Triples(b.state.pieces()), (Pieces{{1, 2, 25}, {0, 3, 5}, {2, 3, 10}}));
  EXPECT_EQ(b.state.surplus(0) + b.state.surplus(1), 0);
}

TEST(SequenceCoverTest, TheOrderDecidesWhoGoesWhere) {
  BoundState b(NoSlack(), 30);
  SequenceCover cover;
  cover.Cover(b.state, {0}, {Order::kBiggestSurplusLast, true, false});
  // Rank 1 (the smaller surplus) first, into rank 3 (the smaller room) first.
  EXPECT_EQ(Triples(b.state.pieces()), (Pieces{{2, 3, 10}, {1, 3, 5}, {1, 2, 25}}));
}

TEST(SequenceCoverTest, WhatANodeCannotKeepCrossesNodesInTheEnd) {
  // Nodes {0, 1} and {2, 3}: rank 0 sheds 30, its node-mate has 10 of room, the other node 20.
  BoundState b(OneRow(4, 8, 2, {60, 0, 20, 0, 20, 0, 20, 0}, 2), 30);
  SequenceCover cover;
  cover.Cover(b.state, {0, 1}, {Order::kRankOrder, true, true});
  EXPECT_EQ(Triples(b.state.pieces()), (Pieces{{0, 1, 10}, {0, 2, 10}, {0, 3, 10}}));
  EXPECT_EQ(b.state.surplus(0), 0);
}

TEST(SequenceCoverTest, NeverOverfillsABinOrOvershootsASurplusInAnyOrder) {
  const Order orders[] = {{Order::kBiggestSurplusLast, true, true},
                          {Order::kBiggestExpertLast, false, true},
                          {Order::kRankOrder, true, false},
                          {Order::kBiggestExpertLast, true, false}};
  for (uint64_t seed = 0; seed < 40; ++seed) {
    for (const Order& order : orders) {
      std::unique_ptr<BoundState> b = RandomState(seed);
      PlacementState& s = b->state;
      const int64_t before = std::accumulate(s.surpluses().begin(), s.surpluses().end(), int64_t{0});
      std::vector<int> nodes(static_cast<size_t>(s.topology().nodes()));
      std::iota(nodes.rbegin(), nodes.rend(), 0);
      SequenceCover().Cover(s, nodes, order);
      int64_t placed = 0;
      for (const Piece& p : s.pieces()) placed += p.tokens;
      EXPECT_EQ(std::accumulate(s.surpluses().begin(), s.surpluses().end(), int64_t{0}), before - placed);
      for (int r = 0; r < s.ranks(); ++r) {
        EXPECT_GE(s.surplus(r), 0) << "seed " << seed;
        EXPECT_GE(s.spare(r), 0) << "seed " << seed;
        EXPECT_GE(s.slots(r), 0) << "seed " << seed;
      }
    }
  }
}

}  // namespace
}  // namespace taot::planners

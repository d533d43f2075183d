#include "planners/placement_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <vector>

#include "placement_testing.h"

namespace taot::planners {
namespace {

using testing::BoundState;
using testing::OneRow;
using testing::OpenBins;
using testing::RandomChange;
using testing::RandomState;
using testing::SameState;

TEST(PlacementStateTest, ResetSplitsEveryRankIntoSurplusAndRoom) {
  // Loads 50, 15, 40, 15 on two nodes of two ranks; cap 30.
  BoundState b(OneRow(4, 8, 2, {30, 20, 10, 5, 40, 0, 0, 15}, 2), 30);
  const PlacementState& s = b.state;
  EXPECT_THAT(s.surpluses(), ::testing::ElementsAre(20, 0, 10, 0));
  EXPECT_THAT(s.spares(), ::testing::ElementsAre(0, 15, 0, 15));
  EXPECT_EQ(s.left(0), 30);
  EXPECT_EQ(s.left(7), 15);
  EXPECT_EQ(s.slots(2), 2);
  EXPECT_TRUE(s.pieces().empty());
  EXPECT_EQ(s.cost(), 0.0);
  EXPECT_EQ(s.open_bins(), (std::vector<Bin>{{15, 1}, {15, 3}}));
  EXPECT_EQ(s.LargestExpert(0), 0);
  EXPECT_EQ(s.LargestExpert(3), 7);
}

TEST(PlacementStateTest, AddPieceMovesTokensTakesASlotAndCostsWhatTheTopologySays) {
  BoundState b(OneRow(4, 8, 2, {30, 20, 10, 5, 40, 0, 0, 15}, 2), 30);
  PlacementState& s = b.state;
  s.AddPiece(0, 0, 1, 12);  // inside the node: 1
  s.AddPiece(0, 1, 3, 8);   // across nodes: λ = 3
  EXPECT_EQ(s.surplus(0), 0);
  EXPECT_EQ(s.spare(1), 3);
  EXPECT_EQ(s.spare(3), 7);
  EXPECT_EQ(s.left(0), 18);
  EXPECT_EQ(s.slots(1), 1);
  EXPECT_TRUE(s.Holds(0, 1));
  EXPECT_FALSE(s.Holds(1, 1));
  EXPECT_EQ(s.cost(), 4.0);
  EXPECT_EQ(testing::Triples(s.pieces()), (std::vector<std::tuple<int, int, int64_t>>{{0, 1, 12}, {1, 3, 8}}));
  EXPECT_EQ(s.first_piece(0), 0);
  EXPECT_EQ(s.next_piece(0), 1);
  EXPECT_EQ(s.next_piece(1), -1);
  s.GrowPiece(0, 0, 3);
  EXPECT_EQ(s.pieces()[0].tokens, 15);
  EXPECT_EQ(s.spare(1), 0);
  EXPECT_EQ(s.cost(), 4.0);  // a grown piece moves no weights
  EXPECT_EQ(s.open_bins(), (std::vector<Bin>{{7, 3}}));
}

TEST(PlacementStateTest, AResidentReplicaCostsNothing) {
  // Nodes {0, 1} and {2, 3}, two experts per rank; the replicas come unsorted, the last expert's
  // among them.
  PlanRequest r = OneRow(4, 8, 2, {30, 20, 10, 5, 40, 0, 0, 15}, 2);
  r.resident = {{7, 0}, {1, 3}, {1, 2}, {0, 2}};
  BoundState b(std::move(r), 30);
  EXPECT_EQ(b.state.PieceCost(0, 1, 3), 0.0);
  EXPECT_EQ(b.state.PieceCost(0, 1, 2), 0.0);
  EXPECT_EQ(b.state.PieceCost(0, 0, 2), 0.0);
  EXPECT_EQ(b.state.PieceCost(0, 0, 3), 3.0);
  EXPECT_EQ(b.state.PieceCost(0, 0, 1), 1.0);
  EXPECT_EQ(b.state.PieceCost(3, 7, 0), 0.0);
  EXPECT_EQ(b.state.PieceCost(3, 7, 1), 3.0);
  EXPECT_EQ(b.state.PieceCost(3, 6, 2), 1.0);
  // Replicas of a rank's experts on ranks of other nodes: rank 0's three, rank 3's one.
  EXPECT_EQ(b.state.ResidentAcross(0), 3);
  EXPECT_EQ(b.state.ResidentAcross(1), 0);
  EXPECT_EQ(b.state.ResidentAcross(3), 1);
}

TEST(PlacementStateTest, BestFitAcrossNodesIsTheTightestBinThatFitsElseTheRoomiest) {
  // Nodes {0, 1, 2} and {3, 4, 5}; rank 0 is hot; rooms at cap 50: 40 30 | 30 30 45.
  BoundState b(OneRow(6, 12, 2, {100, 0, 10, 0, 20, 0, 20, 0, 20, 0, 5, 0}, 3), 50);
  PlacementState& s = b.state;
  EXPECT_EQ(s.BestFitBin(0, 0, 25, Scope::kOtherNodes), 3);  // 3 and 4 tie: the lower rank
  EXPECT_EQ(s.BestFitBin(0, 0, 40, Scope::kOtherNodes), 5);
  EXPECT_EQ(s.BestFitBin(0, 0, 60, Scope::kOtherNodes), 5);  // none fits: the roomiest
  EXPECT_EQ(s.BestFitBin(0, 0, 25, Scope::kSameNode), 2);
  EXPECT_EQ(s.BestFitBin(0, 0, 35, Scope::kSameNode), 1);
  EXPECT_EQ(s.BestFitBin(0, 0, 50, Scope::kSameNode), 1);
  s.AddPiece(0, 0, 3, 20);  // rank 3: room 10, holds expert 0
  EXPECT_EQ(s.BestFitBin(0, 0, 5, Scope::kOtherNodes), 4);
  EXPECT_EQ(s.BestFitBin(0, 1, 5, Scope::kOtherNodes), 3);
}

TEST(PlacementStateTest, BestFitOnAGeneralMatrixIsTheCheapestBinThatFits) {
  PlanRequest r = OneRow(4, 8, 2, {100, 0, 10, 0, 30, 0, 0, 0}, 2);
  r = taot::testing::Reshaped(r, [](Problem& p) {
    p.topology = Topology::FromMatrix({0, 0, 1, 1}, {0, 2, 1.5, 4,  //
                                                     2, 0, 3, 3,    //
                                                     1.5, 3, 0, 1,  //
                                                     4, 3, 1, 0})
                     .value();
  });
  BoundState b(std::move(r), 50);  // rooms 40, 20, 50
  ASSERT_FALSE(b.state.tree());
  EXPECT_EQ(b.state.BestFitBin(0, 0, 15, Scope::kAnywhere), 2);  // cost 1.5
  EXPECT_EQ(b.state.BestFitBin(0, 0, 30, Scope::kAnywhere), 1);  // cost 2: rank 2 is too small
  EXPECT_EQ(b.state.BestFitBin(0, 0, 60, Scope::kAnywhere), 3);  // none fits: the roomiest
  EXPECT_EQ(b.state.BestFitBin(0, 0, 15, Scope::kOtherNodes), 2);
  EXPECT_EQ(b.state.BestFitBin(0, 0, 15, Scope::kSameNode), 1);
}

TEST(PlacementStateTest, RollbackRestoresTheExactStateAfterAnySequenceOfChanges) {
  std::mt19937_64 rng(12);
  for (uint64_t seed = 0; seed < 60; ++seed) {
    std::unique_ptr<BoundState> b = RandomState(seed);
    PlacementState& s = b->state;
    for (int i = 0; i < 5; ++i) RandomChange(s, rng);  // not logged
    if (seed % 3 == 0) s.DeferNode(static_cast<int>(seed % 2));
    s.set_logging(true);
    const size_t start = s.log().size();
    for (int i = 0; i < 4; ++i) RandomChange(s, rng);
    const size_t mark = s.log().size();
    BoundState at_mark(b->request, 0);
    at_mark.state.Restore(s.values());
    for (int i = 0; i < 12; ++i) RandomChange(s, rng);
    BoundState after(b->request, 0);
    after.state.Restore(s.values());
    const size_t logged = s.log().size() - mark;

    std::vector<PlacementState::Change> redo;
    s.Rollback(mark, &redo);
    EXPECT_TRUE(SameState(s, at_mark.state)) << "seed " << seed;
    EXPECT_EQ(s.log().size(), mark);
    EXPECT_EQ(redo.size(), logged);
    s.Redo(redo);  // the same changes again, in their order
    EXPECT_TRUE(SameState(s, after.state)) << "seed " << seed;
    s.Rollback(start, nullptr);
    s.set_logging(false);
    s.EndDeferral();
    for (int i = 0; i < 5; ++i) RandomChange(s, rng);  // still consistent after the undo
    EXPECT_EQ(s.tree() ? OpenBins(s) : std::vector<Bin>{}, s.open_bins()) << "seed " << seed;
  }
}

// Everything of node n that a stamp names: per rank its surplus, room, slots and the experts it
// holds pieces of, and its experts' tokens left.
std::vector<int64_t> NodeValues(const PlacementState& s, int n) {
  std::vector<int64_t> out;
  for (int r : s.topology().ranks_of_node(n)) {
    out.insert(out.end(), {s.surplus(r), s.spare(r), s.slots(r)});
    for (int i = 0; i < s.slots_per_rank() - s.slots(r); ++i) out.push_back(s.held(r, i));
    for (int e = r * s.experts_per_rank(); e < (r + 1) * s.experts_per_rank(); ++e) out.push_back(s.left(e));
  }
  return out;
}

// A walk of logged changes, rollbacks to earlier marks and redos: a node's stamp seen before
// always comes with the node's values seen with it, and a rollback gives every node back the
// stamp it had at the mark.
TEST(PlacementStateTest, ANodesStampNamesItsValuesAndARollbackGivesItBack) {
  std::mt19937_64 rng(5);
  int rollbacks = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    std::unique_ptr<BoundState> b = RandomState(seed);
    PlacementState& s = b->state;
    const int nodes = s.topology().nodes();
    std::map<std::pair<uint64_t, int>, std::vector<int64_t>> seen;  // by (stamp, node)
    std::vector<std::pair<size_t, std::vector<uint64_t>>> marks;
    auto stamps = [&] {
      std::vector<uint64_t> out;
      for (int n = 0; n < nodes; ++n) out.push_back(s.node_stamp(n));
      return out;
    };
    auto check = [&](int step) {
      for (int n = 0; n < nodes; ++n) {
        const auto [it, fresh] = seen.try_emplace({s.node_stamp(n), n}, NodeValues(s, n));
        if (!fresh) {
          ASSERT_EQ(it->second, NodeValues(s, n)) << "seed " << seed << ", step " << step << ", node " << n;
        }
      }
    };
    s.set_logging(true);
    check(-1);
    for (int step = 0; step < 60; ++step) {
      const uint64_t pick = rng() % 8;
      if (pick == 0) {
        marks.emplace_back(s.log().size(), stamps());
      } else if (pick == 1 && !marks.empty()) {
        const size_t m = rng() % marks.size();
        std::vector<PlacementState::Change> redo;
        s.Rollback(marks[m].first, &redo);
        ASSERT_EQ(stamps(), marks[m].second) << "seed " << seed << ", step " << step;
        ++rollbacks;
        if (rng() % 2 == 0) s.Redo(redo);
        marks.resize(m + 1);
      } else {
        RandomChange(s, rng);
      }
      check(step);
    }
  }
  EXPECT_GT(rollbacks, 100);
}

TEST(PlacementStateTest, ChangesAreOnlyLoggedWhileLoggingIsOn) {
  BoundState b(OneRow(4, 8, 2, {30, 20, 10, 5, 40, 0, 0, 15}, 2), 30);
  PlacementState& s = b.state;
  s.AddPiece(0, 0, 1, 5);
  EXPECT_TRUE(s.log().empty());
  s.set_logging(true);
  s.AddPiece(0, 1, 3, 5);
  s.SetRoom(2, 4, 0);
  s.AddDebt(1.0);
  ASSERT_EQ(s.log().size(), 3u);
  EXPECT_EQ(s.log()[0].kind, PlacementState::Change::kAdd);
  EXPECT_EQ(s.log()[1].kind, PlacementState::Change::kRoom);
  EXPECT_EQ(s.log()[2].kind, PlacementState::Change::kDebt);
  s.Rollback(0, nullptr);
  EXPECT_EQ(s.pieces().size(), 1u);
  EXPECT_EQ(s.surplus(2), 10);
  EXPECT_EQ(s.debt(), 0.0);
  s.ClearLog();
  EXPECT_TRUE(s.log().empty());
}

TEST(PlacementStateTest, TheBinIndexFollowsEveryChangeAndADeferredNodeCatchesUpAtTheEnd) {
  std::mt19937_64 rng(3);
  for (uint64_t seed = 0; seed < 40; seed += 2) {  // two-level topologies
    std::unique_ptr<BoundState> b = RandomState(seed);
    PlacementState& s = b->state;
    ASSERT_TRUE(s.tree());
    for (int i = 0; i < 30; ++i) {
      RandomChange(s, rng);
      ASSERT_EQ(s.open_bins(), OpenBins(s)) << "seed " << seed << ", change " << i;
    }
    s.DeferNode(1);
    for (int i = 0; i < 30; ++i) RandomChange(s, rng);
    std::vector<Bin> others = s.open_bins();
    std::erase_if(others, [&](const Bin& bin) { return s.topology().node_of(bin.rank) == 1; });
    std::vector<Bin> want = OpenBins(s);
    std::erase_if(want, [&](const Bin& bin) { return s.topology().node_of(bin.rank) == 1; });
    EXPECT_EQ(others, want) << "seed " << seed;  // other nodes stay current
    s.EndDeferral();
    EXPECT_EQ(s.open_bins(), OpenBins(s)) << "seed " << seed;
  }
}

TEST(PlacementStateTest, ADeferredResetEndsAsAResetWithTheSameChanges) {
  for (uint64_t seed = 0; seed < 40; ++seed) {  // two-level topologies and general matrices
    std::unique_ptr<BoundState> reset = RandomState(seed), deferred = RandomState(seed);
    PlacementState &a = reset->state, &b = deferred->state;
    // b's index starts stale: whatever changes it held before are forgotten by the reset.
    std::mt19937_64 stale(seed + 100);
    for (int i = 0; i < 10; ++i) RandomChange(b, stale);
    b.ClearDebt();  // a node's cover's, which a reset leaves to CoverNode
    b.ResetDeferred(a.cap());
    std::mt19937_64 rng_a(seed), rng_b(seed);
    for (int i = 0; i < 20; ++i) {
      RandomChange(a, rng_a);
      RandomChange(b, rng_b);
    }
    b.EndDeferral();
    EXPECT_TRUE(SameState(a, b)) << "seed " << seed;
    EXPECT_EQ(b.open_bins(), b.tree() ? OpenBins(b) : std::vector<Bin>{}) << "seed " << seed;
    // And the index follows later changes again.
    for (int i = 0; i < 10; ++i) {
      RandomChange(a, rng_a);
      RandomChange(b, rng_b);
    }
    EXPECT_TRUE(SameState(a, b)) << "seed " << seed;
  }
}

TEST(PlacementStateTest, RestoreGoesBackToASavedCopy) {
  std::unique_ptr<BoundState> b = RandomState(4);
  PlacementState& s = b->state;
  std::mt19937_64 rng(1);
  for (int i = 0; i < 10; ++i) RandomChange(s, rng);
  const PlacementState::Values saved = s.values();
  BoundState copy(b->request, 0);
  copy.state.Restore(saved);
  for (int i = 0; i < 10; ++i) RandomChange(s, rng);
  EXPECT_FALSE(SameState(s, copy.state));
  s.Restore(saved);
  EXPECT_TRUE(SameState(s, copy.state));
}

}  // namespace
}  // namespace taot::planners

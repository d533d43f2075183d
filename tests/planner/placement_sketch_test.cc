#include "planners/placement_sketch.h"

#include <gtest/gtest.h>

#include <random>
#include <tuple>
#include <vector>

#include "placement_testing.h"
#include "planners/greedy_covers.h"

namespace taot::planners {
namespace {

using testing::BoundState;
using testing::OneRow;
using testing::RandomState;
using testing::SameState;

// A few pieces inside each node first, so that covers find pieces to grow and bins that hold
// experts already.
void CoverInsideNodes(PlacementState& s) {
  for (int h = 0; h < s.ranks(); h += 2) {
    if (s.surplus(h) > 0) CoverRank(s, h, Scope::kSameNode);
  }
}

// The touches a committed cover made, read back from the state's log.
std::vector<Sketch::Touch> Committed(const PlacementState& s, size_t mark) {
  std::vector<Sketch::Touch> out;
  for (size_t i = mark; i < s.log().size(); ++i) {
    const PlacementState::Change& u = s.log()[i];
    if (u.kind == PlacementState::Change::kAdd) out.push_back({u.expert, u.bin, u.amount, true});
    if (u.kind == PlacementState::Change::kGrow) {
      const Piece& p = s.pieces()[u.piece];
      out.push_back({p.expert, p.rank, u.amount, false});
    }
  }
  return out;
}

std::vector<std::tuple<int, int, int64_t, bool>> AsTuples(const std::vector<Sketch::Touch>& touches) {
  std::vector<std::tuple<int, int, int64_t, bool>> out;
  for (const Sketch::Touch& t : touches) out.emplace_back(t.expert, t.bin, t.amount, t.new_piece);
  return out;
}

TEST(SketchTest, CoverOtherNodesMatchesCommittingCoverRankThenUndoingIt) {
  int compared = 0;
  for (uint64_t seed = 0; seed < 80; ++seed) {
    std::unique_ptr<BoundState> b = RandomState(seed, 12, 48, 1 + static_cast<int>(seed % 3), 4);
    PlacementState& s = b->state;
    CoverInsideNodes(s);
    Sketch sketch;
    sketch.Resize(s.ranks(), s.ranks() * s.experts_per_rank());
    for (int h = 0; h < s.ranks(); ++h) {
      if (s.surplus(h) <= 0) continue;
      // As CoverNode sees it: h's node deferred.
      s.DeferNode(s.topology().node_of(h));
      sketch.Start(s, h);
      sketch.CoverOtherNodes();

      BoundState before(b->request, 0);
      before.state.Restore(s.values());
      s.ClearLog();
      s.set_logging(true);
      const double cost_before = s.cost();
      CoverRank(s, h, Scope::kOtherNodes);
      EXPECT_EQ(sketch.rem(), s.surplus(h)) << "seed " << seed << ", rank " << h;
      EXPECT_EQ(AsTuples(sketch.touches()), AsTuples(Committed(s, 0))) << "seed " << seed << ", rank " << h;
      EXPECT_DOUBLE_EQ(cost_before + sketch.cost(), s.cost()) << "seed " << seed << ", rank " << h;
      s.Rollback(0, nullptr);
      s.set_logging(false);
      EXPECT_TRUE(SameState(s, before.state)) << "seed " << seed << ", rank " << h;
      s.EndDeferral();
      ++compared;
    }
  }
  EXPECT_GT(compared, 100);
}

TEST(SketchTest, QueriesSeeTheTouchesAndTheStateStaysAsItWas) {
  // Nodes {0, 1} and {2, 3}; rank 0 hot by 20; rooms 15 and 15; K = 1.
  BoundState b(OneRow(4, 8, 1, {30, 20, 10, 5, 40, 0, 0, 15}, 2), 30);
  const PlacementState& s = b.state;
  Sketch sk;
  sk.Resize(4, 8);
  sk.Start(s, 0);
  EXPECT_EQ(sk.rem(), 20);
  EXPECT_EQ(sk.LargestExpert(), 0);
  EXPECT_TRUE(sk.CanHost(0, 3));
  sk.Add(0, 3, 12, true, 3.0);
  EXPECT_EQ(sk.rem(), 8);
  EXPECT_EQ(sk.cost(), 3.0);
  EXPECT_EQ(sk.Room(3), 3);
  EXPECT_EQ(sk.Left(0), 18);
  EXPECT_FALSE(sk.CanHost(1, 3));    // its one slot is taken
  EXPECT_FALSE(sk.CanHost(0, 0));    // h itself
  EXPECT_EQ(sk.LargestExpert(), 1);  // 20 left of expert 1, 18 of expert 0
  EXPECT_EQ(s.spare(3), 15);
  EXPECT_TRUE(s.pieces().empty());
  // Across nodes only rank 3 was open, and the sketch filled its slot: a cover adds nothing.
  sk.CoverOtherNodes();
  EXPECT_EQ(sk.touches().size(), 1u);
  EXPECT_EQ(sk.rem(), 8);
}

TEST(SketchTest, RewindForgetsTheTouchesAfterTheMark) {
  std::unique_ptr<BoundState> b = RandomState(6, 8, 32, 3, 4);
  const PlacementState& s = b->state;
  int h = 0;
  while (s.surplus(h) <= 0) ++h;
  Sketch sk;
  sk.Resize(8, 32);
  sk.Start(s, h);
  const int e = sk.LargestExpert();
  const int c = s.BestFitBin(h, e, 1, Scope::kOtherNodes);
  ASSERT_GE(c, 0);
  sk.Add(e, c, 1, true, 2.5);
  const Sketch::Mark mark = sk.mark();
  const int64_t room = sk.Room(c);
  sk.CoverOtherNodes();
  ASSERT_GT(sk.touches().size(), mark.touches);
  sk.Rewind(mark);
  EXPECT_EQ(sk.touches().size(), 1u);
  EXPECT_EQ(sk.rem(), s.surplus(h) - 1);
  EXPECT_EQ(sk.cost(), 2.5);
  EXPECT_EQ(sk.Room(c), room);
  EXPECT_EQ(sk.Left(e), s.left(e) - 1);
  for (int r = 0; r < 8; ++r) {
    if (r != c) {
      EXPECT_EQ(sk.Room(r), s.spare(r));
    }
  }
}

}  // namespace
}  // namespace taot::planners

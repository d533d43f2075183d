#include "planners/split_cover.h"

#include <gtest/gtest.h>

#include <limits>
#include <tuple>
#include <vector>

#include "placement_testing.h"
#include "planners/greedy_covers.h"

namespace taot::planners {
namespace {

using testing::BoundState;
using testing::OneRow;
using testing::RandomState;
using testing::Triples;

constexpr double kNoBound = std::numeric_limits<double>::infinity();

TEST(SplitCoverTest, AllAcrossNodesWhenThatCovers) {
  // Two nodes of two ranks, K = 2; rank 0 sheds 30; rooms 10 | 30 30.
  BoundState b(OneRow(4, 8, 2, {60, 0, 20, 0, 0, 0, 0, 0}, 2), 30);
  SplitCover split;
  split.Resize(4, 8);
  const SplitCover::Split s = split.Plan(b.state, 0, kNoBound);
  EXPECT_EQ(s.inside, 0);
  EXPECT_EQ(s.key, (SplitCover::Key{0, 3.0}));  // one piece across beats 1 inside + 1 across
}

TEST(SplitCoverTest, APieceInsideWhenTheOtherNodesCannotTakeItAll) {
  // K = 1; rank 0 sheds 30; rooms 10 | 15 5: across alone leaves 10.
  BoundState b(OneRow(4, 8, 1, {60, 0, 20, 0, 15, 0, 25, 0}, 2), 30);
  SplitCover split;
  split.Resize(4, 8);
  const SplitCover::Split s = split.Plan(b.state, 0, kNoBound);
  EXPECT_EQ(s.inside, 1);
  EXPECT_EQ(s.key, (SplitCover::Key{0, 7.0}));
  split.Apply(b.state, 0, s.inside);
  using Pieces = std::vector<std::tuple<int, int, int64_t>>;
  EXPECT_EQ(Triples(b.state.pieces()), (Pieces{{0, 1, 10}, {0, 2, 15}, {0, 3, 5}}));
}

TEST(SplitCoverTest, ABoundBelowEveryPieceInsideStopsTheSearchAtNone) {
  BoundState b(OneRow(4, 8, 1, {60, 0, 20, 0, 15, 0, 25, 0}, 2), 30);
  SplitCover split;
  split.Resize(4, 8);
  const SplitCover::Split s = split.Plan(b.state, 0, 0.5);
  EXPECT_EQ(s.inside, 0);
  EXPECT_EQ(s.key, (SplitCover::Key{10, 6.0}));
}

TEST(SplitCoverTest, ThePlannedKeyIsWhatApplyingTheSplitLeaves) {
  int compared = 0;
  for (uint64_t seed = 0; seed < 120; ++seed) {
    std::unique_ptr<BoundState> b = RandomState(seed, 12, 48, 1 + static_cast<int>(seed % 3), 4);
    PlacementState& s = b->state;
    SplitCover split;
    split.Resize(s.ranks(), s.ranks() * s.experts_per_rank());
    for (int h = 0; h < s.ranks(); ++h) {
      if (s.surplus(h) <= 0) continue;
      s.DeferNode(s.topology().node_of(h));
      const SplitCover::Split planned = split.Plan(s, h, kNoBound);
      split.Apply(s, h, planned.inside);
      EXPECT_EQ(s.surplus(h), std::get<0>(planned.key)) << "seed " << seed << ", rank " << h;
      EXPECT_DOUBLE_EQ(s.cost(), std::get<1>(planned.key)) << "seed " << seed << ", rank " << h;
      s.EndDeferral();
      ++compared;
    }
  }
  EXPECT_GT(compared, 200);
}

}  // namespace
}  // namespace taot::planners

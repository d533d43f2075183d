#include "planners/two_piece_cover.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <random>

#include "placement_testing.h"
#include "planners/greedy_covers.h"

namespace taot::planners {
namespace {

using testing::BoundState;
using testing::OneRow;
using testing::RandomState;

constexpr double kNone = std::numeric_limits<double>::infinity();

// The cheapest cover of h's whole surplus by one or two new pieces, by brute force over every
// expert, bin and split of the tokens; kNone when there is none.
double CheapestByBruteForce(const PlacementState& s, int h) {
  const int per_rank = s.experts_per_rank();
  const int64_t rem = s.surplus(h);
  auto usable = [&](int e, int c) { return c != h && s.IsOpen(c) && !s.Holds(e, c); };
  double best = kNone;
  for (int e1 = h * per_rank; e1 < (h + 1) * per_rank; ++e1) {
    for (int c1 = 0; c1 < s.ranks(); ++c1) {
      if (!usable(e1, c1)) continue;
      if (s.left(e1) >= rem && s.spare(c1) >= rem) best = std::min(best, s.PieceCost(h, e1, c1));
      for (int e2 = h * per_rank; e2 < (h + 1) * per_rank; ++e2) {
        for (int c2 = 0; c2 < s.ranks(); ++c2) {
          if (!usable(e2, c2) || (e1 == e2 && c1 == c2)) continue;
          if (c1 == c2 && s.slots(c1) < 2) continue;
          // The first piece's sizes a1 (the second takes rem - a1) that every bound allows.
          int64_t lo = 1, hi = rem - 1;
          if (e1 == e2) {
            if (s.left(e1) < rem) continue;
          } else {
            hi = std::min(hi, s.left(e1));
            lo = std::max(lo, rem - s.left(e2));
          }
          if (c1 == c2) {
            if (s.spare(c1) < rem) continue;
          } else {
            hi = std::min(hi, s.spare(c1));
            lo = std::max(lo, rem - s.spare(c2));
          }
          if (lo <= hi) best = std::min(best, s.PieceCost(h, e1, c1) + s.PieceCost(h, e2, c2));
        }
      }
    }
  }
  return best;
}

TEST(TwoPieceCoverTest, OnePieceInsideTheNodeWhenABinTakesItAll) {
  // Nodes {0, 1, 2} and {3, 4, 5}; rank 0 sheds 35; rooms 55 45 | 45 45 60.
  BoundState b(OneRow(6, 12, 2, {70, 30, 10, 0, 20, 0, 20, 0, 20, 0, 5, 0}, 3), 65);
  TwoPieceCover cover;
  cover.Prepare(b.state);
  const std::optional<TwoPieceCover::Option> o = cover.Find(b.state, 0);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->pieces, 1);
  EXPECT_EQ(o->cost, 1.0);
  EXPECT_EQ(o->first.rank, 2);  // the tightest bin that fits
  EXPECT_EQ(o->first.tokens, 35);
  TwoPieceCover::Apply(b.state, 0, *o);
  EXPECT_EQ(b.state.surplus(0), 0);
}

TEST(TwoPieceCoverTest, TwoPiecesInsideBeatOneAcross) {
  // Rank 0 sheds 50; rooms 40 30 | 30 30 45: no one bin takes it all, two intra-node pieces do.
  BoundState b(OneRow(6, 12, 2, {70, 30, 10, 0, 20, 0, 20, 0, 20, 0, 5, 0}, 3), 50);
  TwoPieceCover cover;
  cover.Prepare(b.state);
  const std::optional<TwoPieceCover::Option> o = cover.Find(b.state, 0);
  ASSERT_TRUE(o);
  EXPECT_EQ(o->pieces, 2);
  EXPECT_EQ(o->cost, 2.0);
  EXPECT_EQ(o->first.rank, 1);  // the roomiest bin first
  EXPECT_EQ(o->first.tokens, 40);
  EXPECT_EQ(o->second.rank, 2);
  EXPECT_EQ(o->second.tokens, 10);
}

TEST(TwoPieceCoverTest, NoneWhenTwoPiecesCannotHoldTheSurplus) {
  // Rank 0 sheds 100 into bins of at most 40.
  BoundState b(OneRow(4, 8, 2, {150, 0, 10, 0, 20, 0, 30, 0}, 2), 50);
  TwoPieceCover cover;
  cover.Prepare(b.state);
  EXPECT_FALSE(cover.Find(b.state, 0));
  EXPECT_EQ(CheapestByBruteForce(b.state, 0), kNone);
}

TEST(TwoPieceCoverTest, CostsWhatTheCheapestCoverByAtMostTwoPiecesCostsOnATwoLevelTopology) {
  int found = 0;
  for (uint64_t seed = 0; seed < 400; seed += 2) {  // two-level topologies
    std::unique_ptr<BoundState> b = RandomState(seed, 8, 16, 1 + static_cast<int>(seed % 3), 4);
    PlacementState& s = b->state;
    if (seed % 4 == 2) {  // some pieces first, so that bins hold experts and slots run out
      for (int h = 0; h < s.ranks(); h += 3) {
        if (s.surplus(h) > 0) PlaceWhole(s, h);
      }
    }
    TwoPieceCover cover;
    cover.Prepare(s);
    for (int h = 0; h < s.ranks(); ++h) {
      if (s.surplus(h) <= 0) continue;
      const double want = CheapestByBruteForce(s, h);
      const std::optional<TwoPieceCover::Option> o = cover.Find(s, h);
      ASSERT_EQ(o.has_value(), want != kNone) << "seed " << seed << ", rank " << h;
      if (!o) continue;
      ++found;
      EXPECT_EQ(o->cost, s.cost() + want) << "seed " << seed << ", rank " << h;
      // The option is a cover: applied, it leaves h at the cap and no bin over it.
      BoundState trial(b->request, 0);
      trial.state.Restore(s.values());
      TwoPieceCover::Apply(trial.state, h, *o);
      EXPECT_EQ(trial.state.surplus(h), 0);
      for (int c = 0; c < s.ranks(); ++c) EXPECT_GE(trial.state.spare(c), 0);
      EXPECT_EQ(trial.state.cost(), o->cost);
    }
  }
  EXPECT_GT(found, 50);
}

}  // namespace
}  // namespace taot::planners

#include "planners/split_cover.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <tuple>
#include <vector>

#include "placement_testing.h"
#include "planners/greedy_covers.h"
#include "planners/placement_sketch.h"
#include "taot/planner/load_stats.h"
#include "test_requests.h"

namespace taot::planners {
namespace {

using testing::BoundState;
using testing::OneRow;
using testing::RandomState;
using testing::SameState;
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
  split.Apply(b.state, 0);
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

// A split made as the state's own covers make it: `inside` pieces inside (h's biggest expert into
// the roomiest bin of its node, the lowest rank among equals), then CoverRank across nodes. What
// Apply, which replays the sketch Plan weighed, must match.
void MakeSplit(PlacementState& s, int h, int inside) {
  for (int j = 0; j < inside; ++j) {
    const int e = s.LargestExpert(h);
    int c = -1;
    for (int x : s.topology().ranks_of_node(s.topology().node_of(h))) {
      if (s.CanHost(h, e, x, Scope::kSameNode) && (c < 0 || s.spare(x) > s.spare(c))) c = x;
    }
    ASSERT_GE(c, 0);
    s.AddPiece(h, e, c, std::min({s.surplus(h), s.left(e), s.spare(c)}));
  }
  if (s.surplus(h) > 0) CoverRank(s, h, Scope::kOtherNodes);
}

TEST(SplitCoverTest, ApplyMakesThePlannedSplitAsTheStatesCoversWould) {
  int compared = 0, grown = 0;
  for (uint64_t seed = 0; seed < 120; ++seed) {
    std::unique_ptr<BoundState> b = RandomState(seed, 12, 48, 1 + static_cast<int>(seed % 3), 4);
    PlacementState& s = b->state;
    SplitCover split;
    split.Resize(s.ranks(), s.ranks() * s.experts_per_rank());
    for (int h = 0; h < s.ranks(); ++h) {
      if (s.surplus(h) <= 0) continue;
      s.DeferNode(s.topology().node_of(h));
      if ((seed + h) % 2 == 0) {
        // A piece across nodes already, for the cover to grow first.
        const int e = s.LargestExpert(h);
        const int c = s.BestFitBin(h, e, 1, Scope::kOtherNodes);
        if (e >= 0 && c >= 0) s.AddPiece(h, e, c, std::min({s.surplus(h), s.left(e), s.spare(c)}) / 2 + 1);
        if (s.surplus(h) == 0) {
          s.EndDeferral();
          continue;
        }
        ++grown;
      }
      const SplitCover::Split planned = split.Plan(s, h, kNoBound);
      BoundState made(b->request, 0);
      made.state.Restore(s.values());
      made.state.DeferNode(s.topology().node_of(h));
      MakeSplit(made.state, h, planned.inside);
      split.Apply(s, h);
      EXPECT_TRUE(SameState(s, made.state)) << "seed " << seed << ", rank " << h;
      EXPECT_EQ(s.surplus(h), std::get<0>(planned.key)) << "seed " << seed << ", rank " << h;
      EXPECT_DOUBLE_EQ(s.cost(), std::get<1>(planned.key)) << "seed " << seed << ", rank " << h;
      s.EndDeferral();
      ++compared;
    }
  }
  EXPECT_GT(compared, 200);
  EXPECT_GT(grown, 80);
}

// The split as first written, the oracle for SplitCover's pruned search: every j in ascending
// order, each covered in full, the first of the least (surplus left, cost) kept. `across(j, placed)`
// sees what each j's cover across nodes placed.
SplitCover::Split EveryJ(const PlacementState& state, int h, double bound,
                         const std::function<void(int, int64_t)>& across = nullptr) {
  Sketch sk;
  sk.Resize(state.ranks(), state.ranks() * state.experts_per_rank());
  sk.Start(state, h);
  SplitCover::Split best;
  for (int j = 0;; ++j) {
    if (j > 0 && state.cost() + sk.cost() > bound) break;
    const Sketch::Mark inside = sk.mark();
    if (sk.rem() > 0) sk.CoverOtherNodes();
    if (across) across(j, inside.rem - sk.rem());
    const SplitCover::Key key{sk.rem(), state.cost() + sk.cost()};
    if (j == 0 || key < best.key) best = {j, key};
    sk.Rewind(inside);
    const int e = sk.LargestExpert();
    if (sk.rem() == 0 || e < 0) break;
    int c = -1;
    for (int x : state.topology().ranks_of_node(state.topology().node_of(h))) {
      if (sk.CanHost(e, x) && (c < 0 || sk.Room(x) > sk.Room(c))) c = x;
    }
    if (c < 0) break;
    sk.Add(e, c, std::min({sk.rem(), sk.Left(e), sk.Room(c)}), true, state.PieceCost(h, e, c));
  }
  return best;
}

// Resident replicas of hot ranks' biggest experts, where a piece costs nothing: on a rank of
// another node (a free piece across) and on a node-mate, within every rank's K slots.
void AddResidents(PlanRequest& request, uint64_t seed) {
  const LoadSums sums = SumLoads(request);
  const int R = request.ranks(), per_rank = request.experts_per_rank(), K = request.slots_per_rank();
  std::vector<int> used(static_cast<size_t>(R), 0);
  for (int h = static_cast<int>(seed % 3); h < R; h += 2) {
    int e = h * per_rank;
    for (int x = e; x < (h + 1) * per_rank; ++x) {
      if (sums.expert_totals[x] > sums.expert_totals[e]) e = x;
    }
    for (int c : {(h + R / 2) % R, h ^ 1}) {
      if (c != h && used[c] < K) {
        ++used[c];
        request.resident.push_back({e, c});
      }
    }
  }
}

// A piece across nodes of h's biggest expert, a bit over half of what fits: one that a cover
// across grows before it adds pieces.
void PieceAcross(PlacementState& s, int h) {
  const int e = s.LargestExpert(h);
  const int c = s.BestFitBin(h, e, 1, Scope::kOtherNodes);
  if (e >= 0 && c >= 0) s.AddPiece(h, e, c, std::min({s.surplus(h), s.left(e), s.spare(c)}) / 2 + 1);
}

// Each hot rank of `request` at `cap`, in rank order, as the placement meets it: its node
// deferred, and every other one first given a piece across nodes, which a cover grows first.
// weigh(s, split, h) checks h and covers it (or leaves it); then the node's deferral ends.
template <typename Weigh>
void ForEachHotRank(const PlanRequest& request, int64_t cap, Weigh weigh) {
  BoundState b(request, cap);
  PlacementState& s = b.state;
  SplitCover split;
  split.Resize(request.ranks(), request.experts());
  for (int h = 0; h < request.ranks(); ++h) {
    if (s.surplus(h) <= 0) continue;
    s.DeferNode(s.topology().node_of(h));
    if (h % 2 == 1) PieceAcross(s, h);
    weigh(s, split, h);
    s.EndDeferral();
  }
}

// Bursts (one expert of a rank made 8-40x hotter), where many pieces inside win, ranks that
// already hold pieces across nodes (what a cover grows first), and resident replicas (free
// pieces, inside and across); with and without a bound, and with a cost past which a split is
// useless.
TEST(SplitCoverTest, ThePrunedSearchFindsTheSplitThatWeighingEveryJFinds) {
  int compared = 0, inside = 0, with_residents = 0, found_below = 0, skipped = 0;
  for (uint64_t seed = 0; seed < 240; ++seed) {
    const int ranks = 16, experts = 64, slots = 1 + static_cast<int>(seed % 4);
    PlanRequest request = taot::testing::RandomRequest(ranks, experts, slots, seed, 4);
    if (seed % 4 != 3) {
      const int hot = static_cast<int>(seed * 7 % experts);
      for (int src = 0; src < request.load.sources(); ++src)
        request.load.at(src, hot) *= 8 + static_cast<int64_t>(seed % 33);
    }
    if (seed % 5 == 4) request = testing::OnRandomMatrix(std::move(request), 4, seed);
    if (seed % 3 == 1) AddResidents(request, seed);
    const LoadSums sums = SumLoads(request);
    const int64_t cap = LoadCap(sums.total, ranks, 2.0 + static_cast<double>(seed % 3) * 4.0);
    ForEachHotRank(request, cap, [&](PlacementState& s, SplitCover& split, int h) {
      for (double bound : {kNoBound, s.cost() + 4.5}) {
        const SplitCover::Split want = EveryJ(s, h, bound);
        const SplitCover::Split got = split.Plan(s, h, bound);
        EXPECT_EQ(got.inside, want.inside) << "seed " << seed << ", rank " << h << ", bound " << bound;
        EXPECT_EQ(got.key, want.key) << "seed " << seed << ", rank " << h << ", bound " << bound;
        inside += want.inside > 0 ? 1 : 0;
        with_residents += request.resident.empty() ? 0 : 1;
        ++compared;
      }
      // A split that would cost `useless` or more loses the caller's trial: the search may skip
      // it, and then answers kUseless, but a split below it is found as before.
      const SplitCover::Split want = EveryJ(s, h, kNoBound);
      for (double extra : {0.5, 2.5, 6.5}) {
        const double useless = s.cost() + extra;
        const SplitCover::Split got = split.Plan(s, h, kNoBound, useless);
        if (std::get<1>(want.key) < useless) {
          EXPECT_EQ(got.inside, want.inside) << "seed " << seed << ", rank " << h << ", useless " << useless;
          EXPECT_EQ(got.key, want.key) << "seed " << seed << ", rank " << h << ", useless " << useless;
          ++found_below;
        } else {
          // The best, kUseless or another split past `useless`: the trial is lost either way.
          EXPECT_TRUE(got.key == SplitCover::kUseless || (got.key == want.key && got.inside == want.inside) ||
                      (std::get<0>(got.key) <= std::get<0>(want.key) && std::get<1>(got.key) >= useless))
              << "seed " << seed << ", rank " << h << ", useless " << useless;
          skipped += got.key == SplitCover::kUseless ? 1 : 0;
        }
      }
      if (s.surplus(h) > 0) {
        split.Plan(s, h, kNoBound);
        split.Apply(s, h);
      }
    });
  }
  EXPECT_GT(compared, 600);
  EXPECT_GT(inside, 150);  // the pieces inside mattered, not only j = 0
  EXPECT_GT(with_residents, 150);
  EXPECT_GT(found_below, 100);  // the useless bound left the search alone
  EXPECT_GT(skipped, 100);      // and cut it short
}

// Bursts too big for any split (3-5 experts 100-300x hotter, one or two slots, caps at 0-2%): every
// split leaves some over, and the search skips those that would leave more than the best, since
// what they must place across exceeds the room there (AcrossRoom). The answer is still every j's.
TEST(SplitCoverTest, SplitsThatLeaveSomeOverAreWeighedAsEveryJWeighsThem) {
  int uncovered = 0, uncovered_inside = 0, full_across = 0;
  for (uint64_t seed = 0; seed < 200; ++seed) {
    const int ranks = 16, experts = 64, slots = 1 + static_cast<int>(seed % 2);
    PlanRequest request = taot::testing::RandomRequest(ranks, experts, slots, seed, 4);
    for (int k = 0; k < 3 + static_cast<int>(seed % 3); ++k) {
      const int hot = static_cast<int>((seed * 7 + static_cast<uint64_t>(k) * 23) % experts);
      for (int src = 0; src < request.load.sources(); ++src)
        request.load.at(src, hot) *= 100 + static_cast<int64_t>(seed % 201);
    }
    if (seed % 4 == 3) AddResidents(request, seed);
    const LoadSums sums = SumLoads(request);
    ForEachHotRank(request, LoadCap(sums.total, ranks, static_cast<double>(seed % 3)),
                   [&](PlacementState& s, SplitCover& split, int h) {
                     // What the skip rests on: after any number of pieces inside, the cover across places no
                     // more than AcrossRoom.
                     const int64_t across = SplitCover::AcrossRoom(s, h);
                     const SplitCover::Split want = EveryJ(s, h, kNoBound, [&](int j, int64_t placed) {
                       EXPECT_LE(placed, across) << "seed " << seed << ", rank " << h << ", j " << j;
                       full_across += placed == across ? 1 : 0;
                     });
                     const SplitCover::Split got = split.Plan(s, h, kNoBound);
                     EXPECT_EQ(got.inside, want.inside) << "seed " << seed << ", rank " << h;
                     EXPECT_EQ(got.key, want.key) << "seed " << seed << ", rank " << h;
                     if (std::get<0>(want.key) > 0) {
                       ++uncovered;
                       uncovered_inside += want.inside > 0 ? 1 : 0;
                     }
                     split.Apply(s, h);
                   });
  }
  EXPECT_GT(uncovered, 100);
  EXPECT_GT(uncovered_inside, 50);  // where pieces inside left the least over, not only j = 0
  EXPECT_GT(full_across, 100);      // covers that filled every bin across: the bound is tight
}

}  // namespace
}  // namespace taot::planners

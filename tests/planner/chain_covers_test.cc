#include "planners/chain_covers.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <random>
#include <tuple>
#include <vector>

#include "placement_testing.h"
#include "planners/greedy_covers.h"
#include "taot/planner/load_stats.h"
#include "test_requests.h"

namespace taot::planners {
namespace {

using testing::BoundState;
using testing::OneRow;

// Two nodes of two ranks, K = 2. Rank 0 holds one expert of 200 tokens; rank 1 is full; rank 2
// holds experts of 30 and 10, rank 3 one of 50.
PlanRequest OneBigExpert() { return OneRow(4, 8, 2, {200, 0, 100, 0, 30, 10, 50, 0}, 2); }

TEST(ChainCoversTest, AHandoffSendsTheWholeSurplusToTheRoomiestRankWhichShedsToItsMates) {
  BoundState b(OneBigExpert(), 100);  // rank 0 sheds 100; rooms 0 | 60 50
  PlacementState& s = b.state;
  ChainCovers chains;
  const std::optional<Handoff> h = chains.PlanHandoff(s, 0, ChainCovers::Sheds::kWhole);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->expert, 0);
  EXPECT_EQ(h->receiver, 2);
  EXPECT_EQ(h->tokens, 100);
  EXPECT_EQ(h->overflow, 40);
  EXPECT_EQ(h->cost, 5.0);  // one piece across (3) and two sheds (30 + 10 >= 40) inside
  ChainCovers::ApplyHandoff(s, 0, *h);
  EXPECT_EQ(s.surplus(0), 0);
  EXPECT_EQ(s.surplus(2), 40);
  EXPECT_EQ(s.spare(2), 0);
  EXPECT_EQ(s.cost(), 3.0);
  EXPECT_EQ(s.debt(), 2.0);
  // The receiver's node then covers it as the handoff estimated.
  CoverRank(s, 2, Scope::kSameNode);
  EXPECT_EQ(s.surplus(2), 0);
  EXPECT_EQ(s.cost(), h->cost);
}

TEST(ChainCoversTest, ACarrierSendsMoreThanItsSurplusAndLeavesTheRestAsRoom) {
  BoundState b(OneBigExpert(), 150);  // rank 0 sheds 50; rooms 50 | 110 100
  PlacementState& s = b.state;
  ChainCovers chains;
  const Handoff* carry = chains.PlanCarry(s, 0, 0, ChainCovers::Sheds::kWhole);
  ASSERT_TRUE(carry);
  EXPECT_EQ(carry->receiver, 2);
  EXPECT_EQ(carry->tokens, 150);  // its room and both its experts, which fit rank 3 whole
  EXPECT_EQ(carry->overflow, 40);
  EXPECT_EQ(carry->cost, 5.0);
  ChainCovers::ApplyCarry(s, 0, *carry);
  EXPECT_EQ(s.surplus(0), 0);
  EXPECT_EQ(s.spare(0), 100);  // room for rank 0's node-mates
  EXPECT_EQ(s.surplus(2), 40);
  EXPECT_EQ(s.debt(), 2.0);
}

TEST(ChainCoversTest, ACarrierShedsPiecesWhereItsExpertsFitNoMateWhole) {
  // Cap 160: rooms 60 | 60 90. The roomiest receiver, rank 3, holds one expert of 70, bigger
  // than its mate's room: whole sheds carry nothing beyond its room, pieces fill the mate.
  BoundState b(OneRow(4, 8, 2, {200, 0, 100, 0, 50, 50, 70, 0}, 2), 160);
  PlacementState& s = b.state;
  ASSERT_EQ(s.spare(2), 60);
  ASSERT_EQ(s.spare(3), 90);
  ChainCovers chains;
  EXPECT_FALSE(chains.PlanCarry(s, 0, 0, ChainCovers::Sheds::kWhole));
  const Handoff* carry = chains.PlanCarry(s, 0, 0, ChainCovers::Sheds::kPieces);
  ASSERT_TRUE(carry);
  EXPECT_EQ(carry->receiver, 3);
  EXPECT_EQ(carry->tokens, 150);  // its own room and its mate's
  EXPECT_EQ(carry->overflow, 60);
  EXPECT_EQ(carry->cost, 4.0);  // one piece across, one shed inside
  // The carry makes its sheds itself: the receiver ends at the cap and the cost is exact.
  ASSERT_EQ(carry->sheds.size(), 1u);
  EXPECT_EQ(carry->sheds[0].expert, 6);
  EXPECT_EQ(carry->sheds[0].mate, 2);
  EXPECT_EQ(carry->sheds[0].tokens, 60);
  ChainCovers::ApplyCarry(s, 0, *carry);
  EXPECT_EQ(s.surplus(3), 0);
  EXPECT_EQ(s.spare(2), 0);
  EXPECT_EQ(s.cost(), carry->cost);
  EXPECT_EQ(s.debt(), 0.0);
}

TEST(ChainCoversTest, APiecesCarryStopsAtItsLimitAndShedsWholeExpertsWhereTheyFit) {
  // Cap 160: rooms 60 | 100 90; the roomiest receiver, rank 2, holds experts of 40 and 20.
  BoundState b(OneRow(4, 8, 2, {200, 0, 100, 0, 40, 20, 70, 0}, 2), 160);
  PlacementState& s = b.state;
  ChainCovers chains;
  // Up to 120: rank 2's room (100) and 20 of its own. Its expert of 40 fits rank 3 whole and
  // goes whole, so the carry grows to 140 rather than split that expert.
  const Handoff* carry = chains.PlanCarry(s, 0, 0, ChainCovers::Sheds::kPieces, 120);
  ASSERT_TRUE(carry);
  EXPECT_EQ(carry->receiver, 2);
  EXPECT_EQ(carry->tokens, 140);
  ASSERT_EQ(carry->sheds.size(), 1u);
  EXPECT_EQ(carry->sheds[0].expert, 4);
  EXPECT_EQ(carry->sheds[0].tokens, 40);
}

// Nodes of three ranks, cap 200: rank 0 sheds 100 of one expert of 300; ranks 1 and 2 are full;
// rank 3 holds experts of 40 and 35 (room 125), rank 4 two of 80 (room 40), rank 5 two of 85
// (room 30).
TEST(ChainCoversTest, AnExpertAsBigAsAMatesRoomGoesWholeIntoIt) {
  BoundState b(OneRow(6, 12, 2, {300, 0, 200, 0, 200, 0, 40, 35, 80, 80, 85, 85}, 3), 200);
  PlacementState& s = b.state;
  ASSERT_EQ(s.spare(4), 40);
  ChainCovers chains;
  const Handoff* carry = chains.PlanCarry(s, 0, 0, ChainCovers::Sheds::kPieces, 195);
  ASSERT_TRUE(carry);
  // Rank 3 sheds its expert of 40 whole into rank 4's room of 40, and 30 of the other into rank
  // 5: two sheds. (Rank 4 and rank 5 as receivers each shed three.) Were the exact fit missed,
  // the expert of 35 would go whole into rank 4 and the other split in two: three sheds.
  EXPECT_EQ(carry->receiver, 3);
  EXPECT_EQ(carry->tokens, 195);
  EXPECT_EQ(carry->cost, 5.0);
  ASSERT_EQ(carry->sheds.size(), 2u);
  EXPECT_EQ(std::make_tuple(carry->sheds[0].expert, carry->sheds[0].mate, carry->sheds[0].tokens),
            std::make_tuple(6, 4, int64_t{40}));
  EXPECT_EQ(std::make_tuple(carry->sheds[1].expert, carry->sheds[1].mate, carry->sheds[1].tokens),
            std::make_tuple(7, 5, int64_t{30}));
}

// Of two mates with the same room, the one with more slots left takes a receiver's shed first.
TEST(ChainCoversTest, OfMatesWithEqualRoomTheOneWithMoreSlotsTakesTheFirstShed) {
  // Cap 200: rank 3 holds experts of 50 and 20 (room 130); ranks 4 and 5 hold 140 and 150.
  BoundState b(OneRow(6, 12, 2, {300, 0, 200, 0, 200, 0, 50, 20, 70, 70, 75, 75}, 3), 200);
  PlacementState& s = b.state;
  // A piece of rank 0's expert on rank 4: room 50 and one slot there, as rank 5 has room 50
  // and two slots (and rank 4, holding the expert, cannot receive it).
  s.AddPiece(0, 0, 4, 10);
  ASSERT_EQ(std::make_tuple(s.spare(4), s.slots(4)), std::make_tuple(int64_t{50}, 1));
  ASSERT_EQ(std::make_tuple(s.spare(5), s.slots(5)), std::make_tuple(int64_t{50}, 2));
  ChainCovers chains;
  const Handoff* carry = chains.PlanCarry(s, 0, 0, ChainCovers::Sheds::kPieces, 200);
  ASSERT_TRUE(carry);
  EXPECT_EQ(carry->receiver, 3);
  EXPECT_EQ(carry->cost, 5.0);
  ASSERT_EQ(carry->sheds.size(), 2u);
  EXPECT_EQ(std::make_tuple(carry->sheds[0].expert, carry->sheds[0].mate), std::make_tuple(6, 5));
  EXPECT_EQ(std::make_tuple(carry->sheds[1].expert, carry->sheds[1].mate), std::make_tuple(7, 4));
}

TEST(ChainCoversTest, AHandoffLeavesTheRoomThatTheReceiversNodeAlreadyOwes) {
  // Nodes of three ranks, cap 100: rank 0 sheds 100; rooms 0 0 | 60 50 50.
  PlanRequest request = OneRow(6, 12, 2, {200, 0, 100, 0, 100, 0, 30, 10, 50, 0, 50, 0}, 3);
  BoundState free_room(request, 100);
  ChainCovers chains;
  const std::optional<Handoff> h = chains.PlanHandoff(free_room.state, 0, ChainCovers::Sheds::kWhole);
  ASSERT_TRUE(h);
  EXPECT_EQ(h->receiver, 3);
  EXPECT_EQ(h->overflow, 40);
  // An earlier carry left rank 5 with 70 to shed: of its node's 100 other room, 30 is left.
  BoundState owed(request, 100);
  owed.state.SetRoom(5, 70, 0);
  EXPECT_TRUE(chains.PlanHandoff(owed.state, 0, ChainCovers::Sheds::kWhole));  // optimistic
  EXPECT_FALSE(chains.PlanHandoff(owed.state, 0, ChainCovers::Sheds::kPieces));
}

TEST(ChainCoversTest, NoHandoffWhenTheReceiversNodeCannotTakeTheOverflow) {
  // Rooms 0 | 60 30: the receiver's mate has 30 of room for an overflow of 40.
  BoundState b(OneRow(4, 8, 2, {200, 0, 100, 0, 30, 10, 70, 0}, 2), 100);
  ChainCovers chains;
  EXPECT_FALSE(chains.PlanHandoff(b.state, 0, ChainCovers::Sheds::kWhole));
}

TEST(ChainCoversTest, HandingOffIsOnlyTriedForAnExpertThriceAsBigAsEveryBinAcross) {
  BoundState big(OneBigExpert(), 100);  // 200 against rooms 60 and 50
  EXPECT_TRUE(ChainCovers::CanHandOff(big.state, 0));
  BoundState small(OneRow(4, 8, 2, {150, 0, 100, 0, 30, 10, 50, 0}, 2), 100);  // 150 against 60
  EXPECT_FALSE(ChainCovers::CanHandOff(small.state, 0));
}

// CanHandOff reads the roomiest bin of another node from the open bins' index: while h's node is
// being covered (its entries there stale) and after random changes, it answers what a scan of
// every rank answers.
TEST(ChainCoversTest, CanHandOffAnswersWhatAScanOfEveryRankAnswers) {
  int yes = 0, no = 0;
  for (uint64_t seed = 0; seed < 80; ++seed) {
    PlanRequest request = taot::testing::RandomRequest(16, 64, 1 + static_cast<int>(seed % 3), seed, 4);
    const int h = static_cast<int>(seed % 16);
    for (int src = 0; src < request.load.sources(); ++src) request.load.at(src, h * 4) *= 1 + seed % 12;
    const LoadSums sums = SumLoads(request);
    BoundState b(request, LoadCap(sums.total, 16, 2.0));
    PlacementState& s = b.state;
    s.DeferNode(s.topology().node_of(h));
    std::mt19937_64 rng(seed);
    for (int step = 0; step < 30; ++step) {
      const int e = s.LargestExpert(h);
      bool scan = e >= 0;
      for (int r = 0; r < s.ranks() && scan; ++r) {
        if (!s.topology().same_node(r, h) && s.IsOpen(r) && 3 * s.spare(r) >= s.left(e)) scan = false;
      }
      ASSERT_EQ(ChainCovers::CanHandOff(s, h), scan) << "seed " << seed << ", step " << step;
      (scan ? yes : no) += 1;
      testing::RandomChange(s, rng);
    }
  }
  EXPECT_GT(yes, 100);
  EXPECT_GT(no, 100);
}

// EP32, four ranks a node, at a 2% cap, with h's expert (seed % 4) 20x hotter at every source;
// h's node deferred, as CoverNode leaves it while it covers the node. With `residents`, that
// many replicas of random experts are resident on their homes' node-mates (free sheds).
std::unique_ptr<BoundState> BurstAt(int h, uint64_t seed, int slots, int residents = 0) {
  PlanRequest request = taot::testing::RandomRequest(32, 128, slots, seed, 4);
  const int hot = h * 4 + static_cast<int>(seed % 4);
  for (int src = 0; src < request.load.sources(); ++src) request.load.at(src, hot) *= 20;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < residents; ++i) {
    const int expert = static_cast<int>(rng() % 128), home = expert / 4;
    const int mate = home / 4 * 4 + (home % 4 + 1 + static_cast<int>(rng() % 3)) % 4;
    request.resident.push_back({expert, mate});
  }
  std::sort(request.resident.begin(), request.resident.end());
  request.resident.erase(std::unique(request.resident.begin(), request.resident.end()), request.resident.end());
  const int64_t cap = LoadCap(SumLoads(request).total, 32, 2.0);
  auto b = std::make_unique<BoundState>(std::move(request), cap);
  b->state.DeferNode(b->state.topology().node_of(h));
  return b;
}

// One step of the random walks below, each as likely: keep a mark in the log, roll back to the
// last mark kept, make a random change, or `make` (a carry or a handoff). True on a rollback.
template <typename Make>
bool RandomStep(PlacementState& s, std::mt19937_64& rng, std::vector<size_t>& marks, Make&& make) {
  switch (rng() % 4) {
    case 0:
      marks.push_back(s.log().size());
      return false;
    case 1:
      if (marks.empty()) return false;
      s.Rollback(marks.back(), nullptr);
      marks.pop_back();
      return true;
    case 2:
      testing::RandomChange(s, rng);
      return false;
    default:
      make();
      return false;
  }
}

// Carries from one burst rank, each applied, between random changes and rollbacks, both kinds
// of sheds in turn through one cache: every carry is the one planned from scratch.
TEST(ChainCoversTest, ACacheUnderTheNodesStampsPlansWhatPlanningFromScratchDoes) {
  int carries = 0, rollbacks = 0;
  std::mt19937_64 rng(9);
  for (uint64_t seed = 0; seed < 60; ++seed) {
    const int h = static_cast<int>(seed % 32);
    const std::unique_ptr<BoundState> b = BurstAt(h, seed, 1 + static_cast<int>(seed % 3));
    PlacementState& s = b->state;
    s.set_logging(true);
    ChainCovers cached, fresh;
    ChainCovers::CarryCache cache;
    std::vector<size_t> marks;
    for (int i = 0; i < 40 && s.surplus(h) > 0; ++i) {
      const ChainCovers::Sheds sheds = rng() % 2 == 0 ? ChainCovers::Sheds::kWhole : ChainCovers::Sheds::kPieces;
      const int e = s.LargestExpert(h);
      if (e < 0) break;
      const int64_t most = s.surplus(h) / 2 + 1;
      const Handoff* want = fresh.PlanCarry(s, h, e, sheds, most);
      const Handoff* got = cached.PlanCarry(s, h, e, sheds, most, &cache);
      ASSERT_EQ(got != nullptr, want != nullptr) << "seed " << seed << ", carry " << i;
      if (want) {
        EXPECT_EQ(std::make_tuple(got->expert, got->receiver, got->tokens, got->overflow, got->cost),
                  std::make_tuple(want->expert, want->receiver, want->tokens, want->overflow, want->cost))
            << "seed " << seed << ", carry " << i;
        EXPECT_EQ(got->sheds.size(), want->sheds.size());
      }
      rollbacks += RandomStep(s, rng, marks, [&] {
        if (want) {
          ChainCovers::ApplyCarry(s, h, *want);
          ++carries;
        }
      });
    }
  }
  EXPECT_GT(carries, 100);
  EXPECT_GT(rollbacks, 100);
}

// Carries with and without the bounds that rule receivers out unweighed, each through its own
// cache, between random changes, rollbacks and carries made, both kinds of sheds in turn, half
// the cases with resident replicas: the bounds never change the carry.
TEST(ChainCoversTest, ReceiversRuledOutOnBoundsNeverChangeTheCarry) {
  int carries = 0;
  std::mt19937_64 rng(29);
  for (uint64_t seed = 0; seed < 80; ++seed) {
    const int h = static_cast<int>(seed % 32);
    const std::unique_ptr<BoundState> b = BurstAt(h, seed, 1 + static_cast<int>(seed % 3), seed % 2 == 0 ? 0 : 60);
    PlacementState& s = b->state;
    s.set_logging(true);
    ChainCovers bounded, unbounded;
    unbounded.set_bounded(false);
    ChainCovers::CarryCache bounded_cache, unbounded_cache;
    std::vector<size_t> marks;
    for (int i = 0; i < 40 && s.surplus(h) > 0; ++i) {
      const ChainCovers::Sheds sheds = rng() % 3 == 0 ? ChainCovers::Sheds::kWhole : ChainCovers::Sheds::kPieces;
      const int e = s.LargestExpert(h);
      if (e < 0) break;
      // The carries' own shares, and more: every receiver reaches a small one.
      const int64_t most = rng() % 2 == 0 ? s.surplus(h) / 4 + 1 : s.left(e);
      const Handoff* want = unbounded.PlanCarry(s, h, e, sheds, most, &unbounded_cache);
      const Handoff* got = bounded.PlanCarry(s, h, e, sheds, most, &bounded_cache);
      ASSERT_EQ(got != nullptr, want != nullptr) << "seed " << seed << ", carry " << i;
      if (want) {
        ++carries;
        EXPECT_EQ(
            std::make_tuple(got->expert, got->receiver, got->tokens, got->overflow, got->cost, got->sheds.size()),
            std::make_tuple(want->expert, want->receiver, want->tokens, want->overflow, want->cost, want->sheds.size()))
            << "seed " << seed << ", carry " << i;
      }
      RandomStep(s, rng, marks, [&] {
        if (want) ChainCovers::ApplyCarry(s, h, *want);
      });
    }
  }
  EXPECT_GT(carries, 300);
}

// PlanHandoff's rule read off every rank of the other nodes, with no survey: the oracle for the
// cached handoffs below.
std::optional<Handoff> HandoffByScan(const PlacementState& s, int h, ChainCovers::Sheds sheds) {
  const int per_rank = s.experts_per_rank();
  const int64_t rem = s.surplus(h);
  int e = -1;
  for (int x = h * per_rank; x < (h + 1) * per_rank; ++x) {
    if (s.left(x) >= rem && (e < 0 || s.left(x) > s.left(e))) e = x;
  }
  if (e < 0) return std::nullopt;
  std::optional<Handoff> best;
  for (int n = 0; n < s.topology().nodes(); ++n) {
    if (n == s.topology().node_of(h)) continue;
    int64_t room = 0;
    int g = -1;
    for (int r : s.topology().ranks_of_node(n)) {
      if (sheds == ChainCovers::Sheds::kPieces) room -= std::max<int64_t>(s.surplus(r), 0);
      if (!s.IsOpen(r)) continue;
      room += s.spare(r);
      if (!s.Holds(e, r) && (g < 0 || s.spare(r) > s.spare(g))) g = r;
    }
    if (g < 0 || rem <= s.spare(g) || room - s.spare(g) < rem - s.spare(g)) continue;
    std::vector<int64_t> own;
    for (int x = g * per_rank; x < (g + 1) * per_rank; ++x) own.push_back(s.left(x));
    std::sort(own.rbegin(), own.rend());
    int pieces = 0;
    int64_t shed = 0;
    while (pieces < per_rank && shed < rem - s.spare(g)) shed += own[pieces++];
    if (shed < rem - s.spare(g)) continue;
    const double cost = s.PieceCost(h, e, g) + pieces * s.tree_costs().intra;
    if (!best ||
        std::make_tuple(cost, rem - s.spare(g), g) < std::make_tuple(best->cost, best->overflow, best->receiver)) {
      best = Handoff{e, g, rem, rem - s.spare(g), cost, {}};
    }
  }
  return best;
}

// Handoffs through one cache, between random changes, rollbacks, carries and handoffs made, both
// kinds of sheds in turn: each is the one a scan of every rank finds.
TEST(ChainCoversTest, AHandoffThroughTheCacheIsTheOneAScanOfEveryRankFinds) {
  int found = 0, rollbacks = 0;
  std::mt19937_64 rng(23);
  for (uint64_t seed = 0; seed < 60; ++seed) {
    const int h = static_cast<int>(seed % 32);
    const std::unique_ptr<BoundState> b = BurstAt(h, seed, 1 + static_cast<int>(seed % 3));
    PlacementState& s = b->state;
    s.set_logging(true);
    ChainCovers chains;
    ChainCovers::CarryCache cache;
    std::vector<size_t> marks;
    for (int i = 0; i < 40 && s.surplus(h) > 0; ++i) {
      const ChainCovers::Sheds sheds = rng() % 2 == 0 ? ChainCovers::Sheds::kWhole : ChainCovers::Sheds::kPieces;
      const std::optional<Handoff> want = HandoffByScan(s, h, sheds);
      const std::optional<Handoff> got = chains.PlanHandoff(s, h, sheds, &cache);
      ASSERT_EQ(got.has_value(), want.has_value()) << "seed " << seed << ", handoff " << i;
      if (want) {
        ++found;
        EXPECT_EQ(std::make_tuple(got->expert, got->receiver, got->tokens, got->overflow, got->cost),
                  std::make_tuple(want->expert, want->receiver, want->tokens, want->overflow, want->cost))
            << "seed " << seed << ", handoff " << i;
      }
      // Carries through the same cache keep its surveys busy between the handoffs.
      const int e = s.LargestExpert(h);
      const Handoff* carry = e >= 0 ? chains.PlanCarry(s, h, e, sheds, s.surplus(h) / 3 + 1, &cache) : nullptr;
      rollbacks += RandomStep(s, rng, marks, [&] {
        if (rng() % 2 == 0) {
          if (carry) ChainCovers::ApplyCarry(s, h, *carry);
        } else if (want) {
          ChainCovers::ApplyHandoff(s, h, *want);
        }
      });
    }
  }
  EXPECT_GT(found, 100);
  EXPECT_GT(rollbacks, 100);
}

// What lets PlanHandoff answer "none" at once for a surplus over the cap: every rank with room
// keeps its own tokens left and its room under the cap together (its load is at least its tokens
// left, and its load and room add up to the cap), so no receiver can take more than the cap with
// all it could shed. Held on walks of the moves the placement makes (carries and handoffs of both
// kinds, whole and split pieces, rollbacks), where the scan of every rank agrees.
TEST(ChainCoversTest, NoReceiverTakesMoreThanTheCapSoASurplusOverItIsHandedOffNowhere) {
  int over_the_cap = 0, handed_off = 0, rollbacks = 0;
  std::mt19937_64 rng(31);
  for (uint64_t seed = 0; seed < 60; ++seed) {
    const int h = static_cast<int>(seed % 32);
    const std::unique_ptr<BoundState> b = BurstAt(h, seed, 1 + static_cast<int>(seed % 3), seed % 2 == 0 ? 0 : 6);
    PlacementState& s = b->state;
    UseResident(s);
    s.set_logging(true);
    ChainCovers chains;
    std::vector<size_t> marks;
    for (int i = 0; i < 40 && s.surplus(h) > 0; ++i) {
      for (int r = 0; r < s.ranks(); ++r) {
        if (s.spare(r) > 0) {
          ASSERT_LE(s.spare(r) + s.TokensLeft(r), s.cap()) << "seed " << seed << ", rank " << r;
        }
      }
      const ChainCovers::Sheds sheds = rng() % 2 == 0 ? ChainCovers::Sheds::kWhole : ChainCovers::Sheds::kPieces;
      const std::optional<Handoff> handoff = chains.PlanHandoff(s, h, sheds);
      ASSERT_EQ(handoff.has_value(), HandoffByScan(s, h, sheds).has_value()) << "seed " << seed << ", step " << i;
      if (s.surplus(h) > s.cap()) {
        ++over_the_cap;
        EXPECT_FALSE(handoff.has_value());
      }
      handed_off += handoff.has_value();
      const int e = s.LargestExpert(h);
      const Handoff* carry = e >= 0 ? chains.PlanCarry(s, h, e, sheds, s.surplus(h) / 3 + 1) : nullptr;
      switch (rng() % 5) {
        case 0:
          marks.push_back(s.log().size());
          break;
        case 1:
          if (!marks.empty()) {
            s.Rollback(marks.back(), nullptr);
            marks.pop_back();
            ++rollbacks;
          }
          break;
        case 2:
          if (carry) ChainCovers::ApplyCarry(s, h, *carry);
          break;
        case 3:
          if (handoff) ChainCovers::ApplyHandoff(s, h, *handoff);
          break;
        default:
          PlaceWhole(s, h);
          if (s.surplus(h) > 0) CoverRank(s, h, rng() % 2 == 0 ? Scope::kSameNode : Scope::kAnywhere);
          break;
      }
    }
  }
  EXPECT_GT(over_the_cap, 100);
  EXPECT_GT(handed_off, 20);
  EXPECT_GT(rollbacks, 20);
}

// A receiver may already have pieces of its own experts on its node-mates (a receiver of an
// earlier carry, or pieces made at random here): its sheds never put a second piece of one
// expert on a mate that holds it.
TEST(ChainCoversTest, ASheddingReceiverSkipsTheMatesThatHoldItsExpert) {
  int receivers_with_pieces = 0;
  std::mt19937_64 rng(17);
  for (uint64_t seed = 0; seed < 80; ++seed) {
    const int h = static_cast<int>(seed % 32);
    const std::unique_ptr<BoundState> b = BurstAt(h, seed, 2 + static_cast<int>(seed % 2));
    PlacementState& s = b->state;
    // Pieces of other ranks' experts on their node-mates, so that receivers hold some.
    for (int i = 0; i < 60; ++i) {
      const int g = static_cast<int>(rng() % 32), e = g * 4 + static_cast<int>(rng() % 4);
      const int m = s.topology().ranks_of_node(s.topology().node_of(g))[rng() % 4];
      if (g == h || m == g || s.slots(m) == 0 || s.Holds(e, m) || s.left(e) < 2) continue;
      s.AddPiece(g, e, m, 1);
    }
    ChainCovers chains;
    for (int i = 0; i < 8 && s.surplus(h) > 0; ++i) {
      const int e = s.LargestExpert(h);
      if (e < 0) break;
      const Handoff* carry = chains.PlanCarry(s, h, e, ChainCovers::Sheds::kPieces, s.surplus(h) / 2 + 1);
      if (!carry) break;
      receivers_with_pieces += s.first_piece(carry->receiver) >= 0;
      for (const Shed& x : carry->sheds) {
        ASSERT_FALSE(s.Holds(x.expert, x.mate))
            << "seed " << seed << ", carry " << i << ": expert " << x.expert << " on rank " << x.mate << " twice";
      }
      ChainCovers::ApplyCarry(s, h, *carry);
    }
  }
  EXPECT_GT(receivers_with_pieces, 20);
}

TEST(ChainCoversTest, NoChainsOnAGeneralMatrix) {
  BoundState b(testing::OnRandomMatrix(OneBigExpert(), 2, 1), 100);
  ASSERT_FALSE(b.state.tree());
  ChainCovers chains;
  EXPECT_FALSE(chains.PlanHandoff(b.state, 0, ChainCovers::Sheds::kWhole));
  EXPECT_FALSE(chains.PlanCarry(b.state, 0, 0, ChainCovers::Sheds::kWhole));
  EXPECT_FALSE(chains.PlanCarry(b.state, 0, 0, ChainCovers::Sheds::kPieces));
  EXPECT_FALSE(ChainCovers::CanHandOff(b.state, 0));
}

}  // namespace
}  // namespace taot::planners

// CountExperts and Reroute's CPU references against a pair-by-pair oracle written from the
// documented rule (route_table.h), on random tables and on the edge cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <vector>

#include "route_table_testing.h"
#include "taot/kernels/reroute.h"

namespace taot::kernels {
namespace {

using testing::OwnedTable;
using testing::Share;

struct Routed {
  std::vector<int32_t> virtual_expert, dest_rank;
  std::vector<int64_t> send_counts, order;
  RouteCheck check;
};

Routed RunCpu(const OwnedTable& table, const std::vector<int32_t>& ids) {
  const RouteTable& t = table.view();
  Routed out;
  const int64_t n = static_cast<int64_t>(ids.size());
  out.virtual_expert.assign(ids.size(), -7);
  out.dest_rank.assign(ids.size(), -7);
  out.send_counts.assign(static_cast<size_t>(t.ranks), -7);
  out.order.assign(ids.size(), -7);
  std::vector<char> workspace(RerouteWorkspaceBytes(n, t));
  RerouteCpu(ids.data(), n, t, out.virtual_expert.data(), out.dest_rank.data(), out.send_counts.data(),
             out.order.data(), workspace.data(), &out.check);
  return out;
}

// The rule, pair by pair: the k-th pair of e goes to e's guests in ascending rank, each taking
// its share in turn, then home; a guest's slot is e's place among the guest's experts.
Routed Oracle(int32_t R, int32_t E, int32_t K, const std::vector<Share>& shares, const std::vector<int32_t>& ids) {
  const int32_t L = E / R + K;
  std::map<int32_t, std::vector<Share>> of_expert;
  std::map<int32_t, std::set<int32_t>> on_guest;
  for (const Share& s : shares) {
    of_expert[s.expert].push_back(s);
    on_guest[s.guest].insert(s.expert);
  }
  for (auto& [e, list] : of_expert) {
    std::sort(list.begin(), list.end(), [](const Share& a, const Share& b) { return a.guest < b.guest; });
  }
  Routed out;
  out.send_counts.assign(static_cast<size_t>(R), 0);
  std::map<int32_t, int64_t> seen;
  for (int32_t e : ids) {
    int64_t k = seen[e]++;
    int32_t v = (e / (E / R)) * L + e % (E / R);
    for (const Share& s : of_expert[e]) {
      if (k < s.pairs) {
        const std::set<int32_t>& held = on_guest[s.guest];
        v = s.guest * L + E / R + static_cast<int32_t>(std::distance(held.begin(), held.find(e)));
        break;
      }
      k -= s.pairs;
    }
    out.virtual_expert.push_back(v);
    out.dest_rank.push_back(v / L);
    ++out.send_counts[v / L];
  }
  out.order.resize(ids.size());
  std::iota(out.order.begin(), out.order.end(), int64_t{0});
  std::stable_sort(out.order.begin(), out.order.end(),
                   [&](int64_t a, int64_t b) { return out.virtual_expert[a] < out.virtual_expert[b]; });
  return out;
}

void ExpectRoutedAsTheOracle(int32_t R, int32_t E, int32_t K, const std::vector<Share>& shares,
                             const std::vector<int32_t>& ids) {
  const OwnedTable table(R, E, K, shares);
  const Routed got = RunCpu(table, ids);
  ASSERT_EQ(got.check.first_bad_pair, static_cast<int64_t>(ids.size()));
  ASSERT_EQ(got.check.first_short_expert, E);
  const Routed want = Oracle(R, E, K, shares, ids);
  EXPECT_EQ(got.virtual_expert, want.virtual_expert);
  EXPECT_EQ(got.dest_rank, want.dest_rank);
  EXPECT_EQ(got.send_counts, want.send_counts);
  EXPECT_EQ(got.order, want.order);
}

// Zipf-like ids, and for a few experts guests (K per guest at most) taking up to all their pairs.
void RandomCase(uint32_t seed, int32_t R, int32_t E, int32_t K, int64_t n, std::vector<Share>& shares,
                std::vector<int32_t>& ids) {
  std::mt19937 rng(seed);
  std::vector<double> weights(static_cast<size_t>(E));
  for (int32_t e = 0; e < E; ++e) weights[e] = 1.0 / (1 + (e * 7919 + static_cast<int32_t>(seed)) % E);
  std::discrete_distribution<int32_t> pick(weights.begin(), weights.end());
  std::vector<int64_t> routed(static_cast<size_t>(E), 0);
  for (int64_t i = 0; i < n; ++i) {
    ids.push_back(pick(rng));
    ++routed[ids.back()];
  }
  std::vector<int32_t> used(static_cast<size_t>(R), 0);
  for (int32_t e = 0; e < E; ++e) {
    int64_t left = routed[e];
    for (int32_t g = 0; g < R && left > 0; ++g) {
      if (g == e / (E / R) || used[g] == K || rng() % 3 != 0) continue;
      const int64_t pairs = 1 + static_cast<int64_t>(rng() % static_cast<uint32_t>(left));
      shares.push_back({e, g, pairs});
      ++used[g];
      left -= pairs;
    }
  }
}

TEST(RerouteCpuTest, MatchesThePairByPairOracleOnRandomTables) {
  struct Shape {
    int32_t R, E, K;
    int64_t n;
  };
  for (const Shape& s : {Shape{4, 16, 2, 1001}, Shape{16, 128, 2, 4099}, Shape{8, 8, 3, 777}, Shape{16, 64, 1, 5000},
                         Shape{64, 256, 2, 32768}}) {
    for (uint32_t seed = 1; seed <= 3; ++seed) {
      SCOPED_TRACE(::testing::Message() << "R " << s.R << " E " << s.E << " K " << s.K << " seed " << seed);
      std::vector<Share> shares;
      std::vector<int32_t> ids;
      RandomCase(seed, s.R, s.E, s.K, s.n, shares, ids);
      ASSERT_FALSE(shares.empty());
      ExpectRoutedAsTheOracle(s.R, s.E, s.K, shares, ids);
    }
  }
}

TEST(RerouteCpuTest, EdgeCases) {
  // No pairs, no plan.
  ExpectRoutedAsTheOracle(4, 8, 2, {}, {});
  // Every pair on one expert, split over three guests and home; the rest of the experts idle.
  ExpectRoutedAsTheOracle(4, 8, 2, {{5, 0, 3}, {5, 1, 4}, {5, 3, 1}}, std::vector<int32_t>(11, 5));
  // An expert with no guests beside one with guests.
  ExpectRoutedAsTheOracle(4, 8, 1, {{0, 2, 2}}, {0, 1, 0, 1, 0, 1, 7});
  // K = 0: everything goes home; virtual ids are the home experts.
  ExpectRoutedAsTheOracle(4, 8, 0, {}, {7, 6, 5, 4, 3, 2, 1, 0, 0});
  // E / R = 1.
  ExpectRoutedAsTheOracle(4, 4, 2, {{0, 1, 1}, {0, 2, 1}, {3, 2, 2}}, {0, 0, 0, 3, 3, 3, 3, 1, 2});
  // A guest that takes every pair of its expert.
  ExpectRoutedAsTheOracle(2, 4, 1, {{1, 1, 3}}, {1, 1, 1, 0});
}

TEST(RerouteCpuTest, ABadExpertIdIsNamed) {
  const OwnedTable table(4, 8, 2, {});
  EXPECT_EQ(RunCpu(table, {0, 1, 8, 2, -1}).check.first_bad_pair, 2);
  EXPECT_EQ(RunCpu(table, {3, 3, 3, -5}).check.first_bad_pair, 3);
  std::vector<int64_t> counts(8, -1);
  RouteCheck check;
  const std::vector<int64_t> wide = {0, 7, 1ll << 40, 7};
  CountExpertsCpu(wide.data(), 4, 8, counts.data(), &check);
  EXPECT_EQ(check.first_bad_pair, 2);
  EXPECT_EQ(counts, (std::vector<int64_t>{1, 0, 0, 0, 0, 0, 0, 2}));
}

TEST(RerouteCpuTest, APlanForOtherCountsIsNamedByItsFirstShortExpert) {
  // Expert 2's guests take 3 pairs, this rank routes 2 of them; expert 6 is short too.
  const OwnedTable table(4, 8, 2, {{2, 0, 2}, {2, 3, 1}, {6, 0, 5}});
  EXPECT_EQ(RunCpu(table, {2, 2, 6, 6, 6}).check.first_short_expert, 2);
  EXPECT_EQ(RunCpu(table, {}).check.first_short_expert, 2);
  EXPECT_EQ(RunCpu(table, {2, 2, 2, 6}).check.first_short_expert, 6);
}

TEST(CountExpertsCpuTest, CountsInt32AndInt64IdsAlike) {
  std::mt19937 rng(3);
  std::vector<int32_t> narrow(10007);
  for (int32_t& e : narrow) e = static_cast<int32_t>(rng() % 37);
  const std::vector<int64_t> wide(narrow.begin(), narrow.end());
  std::vector<int64_t> a(37), b(37), want(37, 0);
  for (int32_t e : narrow) ++want[e];
  RouteCheck ca, cb;
  CountExpertsCpu(narrow.data(), static_cast<int64_t>(narrow.size()), 37, a.data(), &ca);
  CountExpertsCpu(wide.data(), static_cast<int64_t>(wide.size()), 37, b.data(), &cb);
  EXPECT_EQ(a, want);
  EXPECT_EQ(b, want);
  EXPECT_EQ(ca.first_bad_pair, 10007);
  EXPECT_EQ(cb.first_bad_pair, 10007);
}

}  // namespace
}  // namespace taot::kernels

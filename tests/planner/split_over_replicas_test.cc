#include "taot/planner/split_over_replicas.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "taot/planner/load_stats.h"
#include "taot/planner/plan_validator.h"
#include "test_requests.h"

namespace taot {
namespace {

using testing::MakeRequest;
using testing::RandomRequest;

int64_t MaxLoad(const std::vector<int64_t>& loads) { return *std::max_element(loads.begin(), loads.end()); }

// Brute force over every whole-token share of two replicas: the lowest achievable max load.
int64_t BestMaxLoadByEnumeration(const PlanRequest& request, Replica a, Replica b) {
  const std::vector<int64_t> totals = ExpertTotals(request);
  const std::vector<int64_t> before = RankLoadsBefore(request);
  int64_t best = MaxLoad(before);
  for (int64_t x = 0; x <= totals[a.expert]; ++x) {
    for (int64_t y = 0; y <= totals[b.expert]; ++y) {
      if (a.expert == b.expert && x + y > totals[a.expert]) break;
      std::vector<int64_t> loads = before;
      loads[request.home_of(a.expert)] -= x;
      loads[a.rank] += x;
      loads[request.home_of(b.expert)] -= y;
      loads[b.rank] += y;
      best = std::min(best, MaxLoad(loads));
    }
  }
  return best;
}

TEST(SplitOverReplicasTest, MatchesEnumerationOnSmallCases) {
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    PlanRequest request = RandomRequest(4, 8, 2, seed, 2);
    for (int src = 0; src < 4; ++src) {
      for (int64_t& n : request.load.row(src)) n /= 20;  // keep the enumeration small
    }
    const std::vector<int64_t> totals = ExpertTotals(request);
    const int hot = static_cast<int>(std::max_element(totals.begin(), totals.end()) - totals.begin());
    const int home = request.home_of(hot);
    const Replica a{hot, (home + 1) % 4};
    const Replica b{seed % 2 ? hot : (hot + 2) % 8, (home + 2) % 4};
    if (request.home_of(b.expert) == b.rank) continue;
    absl::StatusOr<Plan> plan = SplitOverReplicas(request, {a, b});
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_TRUE(ValidatePlan(request, *plan).ok());
    EXPECT_EQ(plan->replicas.size(), 2u);
    EXPECT_EQ(MaxLoad(RankLoadsAfter(request, *plan)), BestMaxLoadByEnumeration(request, a, b)) << "seed " << seed;
  }
}

TEST(SplitOverReplicasTest, KeepsIdleReplicasAndIsDeterministic) {
  // Rank 1's expert 2 is cold: a replica of it gets no tokens but stays in the plan.
  const PlanRequest request = MakeRequest(2, 4, 2, {{90, 5, 1, 1}, {80, 5, 1, 1}}, 2);
  absl::StatusOr<Plan> first = SplitOverReplicas(request, {{2, 0}, {0, 1}});
  absl::StatusOr<Plan> second = SplitOverReplicas(request, {{0, 1}, {2, 0}});
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(*first, *second);
  EXPECT_EQ(first->replicas, (std::vector<Replica>{{0, 1}, {2, 0}}));
  const std::vector<int64_t> after = RankLoadsAfter(request, *first);
  EXPECT_EQ(after[0], 92);  // 184 tokens, split evenly
  EXPECT_EQ(after[1], 92);
}

// Two replicas on each rank, of the first experts of the next two ranks: valid for any
// request with two slots, and different for every shape.
std::vector<Replica> SomeReplicas(const PlanRequest& request) {
  std::vector<Replica> replicas;
  for (int r = 0; r < request.ranks(); ++r) {
    for (int k = 1; k <= 2 && k < request.ranks(); ++k) {
      replicas.push_back({(r + k) % request.ranks() * request.experts_per_rank(), r});
    }
  }
  return replicas;
}

// A kept splitter, after splits of every other shape, gives what a new one gives: nothing one
// call leaves in its buffers reaches the next.
TEST(ReplicaSplitterTest, AKeptSplitterSplitsAsANewOneDoes) {
  std::vector<PlanRequest> requests;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    requests.push_back(RandomRequest(16, 64, 2, seed));
    requests.push_back(RandomRequest(4, 8, 2, seed, 2));
    requests.push_back(RandomRequest(24, 24, 2, seed));
  }
  ReplicaSplitter kept;
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < requests.size(); ++i) {
      const std::vector<Replica> replicas = SomeReplicas(requests[i]);
      absl::StatusOr<Plan> reused = kept.Split(requests[i], replicas);
      absl::StatusOr<Plan> fresh = ReplicaSplitter().Split(requests[i], replicas);
      ASSERT_TRUE(reused.ok() && fresh.ok()) << reused.status() << fresh.status();
      ASSERT_TRUE(ValidatePlan(requests[i], *reused).ok());
      EXPECT_EQ(*reused, *fresh) << "request " << i << ", round " << round;
    }
  }
  // A bad call in between changes nothing for the next.
  const std::vector<Replica> on_home = {{0, requests[0].home_of(0)}};
  EXPECT_FALSE(kept.Split(requests[0], on_home).ok());
  EXPECT_EQ(kept.Split(requests[1], SomeReplicas(requests[1])).value(),
            ReplicaSplitter().Split(requests[1], SomeReplicas(requests[1])).value());
}

TEST(SplitOverReplicasTest, RejectsAReplicaOnItsHome) {
  const PlanRequest request = MakeRequest(2, 4, 2, {{9, 1, 1, 1}, {9, 1, 1, 1}}, 2);
  absl::StatusOr<Plan> plan = SplitOverReplicas(request, {{0, 1}, {1, 0}});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("replicas[1]"), std::string::npos) << plan.status();
}

}  // namespace
}  // namespace taot

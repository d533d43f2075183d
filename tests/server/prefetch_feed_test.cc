#include "taot/server/prefetch_feed.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "taot/planner/plan_hash.h"
#include "taot/sim/case_generator.h"

namespace taot::server {
namespace {

Prefetch For(int64_t step, int layer) {
  Prefetch p;
  p.key = {step, layer};
  p.replicas = {{1, 2}};
  return p;
}

// The sequences of every batch a feed's callbacks got, in order.
struct Batches {
  PrefetchFeed::Callback Callback() {
    return [this](PrefetchFeed::Prefetches batch) {
      std::vector<uint64_t> sequences;
      for (const auto& p : batch) sequences.push_back(p->sequence);
      got.push_back(sequences);
    };
  }
  std::vector<std::vector<uint64_t>> got;
};

TEST(PrefetchFeedTest, IsOffUntilItsFirstWatcherUnlessOnFromTheStart) {
  PrefetchFeed off(false);
  EXPECT_FALSE(off.on());
  Batches batches;
  off.WhenPublished(0, batches.Callback());
  EXPECT_TRUE(off.on());
  EXPECT_TRUE(PrefetchFeed(true).on());
}

TEST(PrefetchFeedTest, AWaitingWatcherIsCalledOnceByThePublishThatFollows) {
  PrefetchFeed feed(true);
  Batches batches;
  feed.WhenPublished(0, batches.Callback());
  EXPECT_TRUE(batches.got.empty());
  EXPECT_EQ(feed.watchers(), 1u);
  feed.Publish({For(4, 1)});
  ASSERT_EQ(batches.got.size(), 1u);
  EXPECT_EQ(batches.got[0], (std::vector<uint64_t>{1}));
  EXPECT_EQ(feed.watchers(), 0u);
  feed.Publish({For(4, 2)});
  EXPECT_EQ(batches.got.size(), 1u);  // once: a watcher waits again for more
}

TEST(PrefetchFeedTest, AWatcherBehindGetsEverythingSinceAtOnceOldestFirst) {
  PrefetchFeed feed(true);
  for (int layer = 0; layer < 3; ++layer) feed.Publish({For(7, layer)});
  Batches batches;
  feed.WhenPublished(1, batches.Callback());
  ASSERT_EQ(batches.got.size(), 1u);  // within the call
  EXPECT_EQ(batches.got[0], (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(feed.watchers(), 0u);
}

TEST(PrefetchFeedTest, AForgottenWatcherIsNotCalled) {
  PrefetchFeed feed(true);
  Batches kept, forgotten;
  feed.WhenPublished(0, kept.Callback());
  const uint64_t id = feed.WhenPublished(0, forgotten.Callback());
  feed.Forget(id);
  EXPECT_EQ(feed.watchers(), 1u);
  feed.Publish({For(1, 0)});
  EXPECT_EQ(kept.got.size(), 1u);
  EXPECT_TRUE(forgotten.got.empty());
}

TEST(PrefetchFeedTest, OnlyTheLatestAreKept) {
  PrefetchFeed feed(true);
  for (size_t i = 0; i < PrefetchFeed::kKept + 5; ++i) feed.Publish({For(static_cast<int64_t>(i), 0)});
  Batches batches;
  feed.WhenPublished(0, batches.Callback());
  ASSERT_EQ(batches.got.size(), 1u);
  ASSERT_EQ(batches.got[0].size(), PrefetchFeed::kKept);
  EXPECT_EQ(batches.got[0].front(), 6u);
  EXPECT_EQ(batches.got[0].back(), PrefetchFeed::kKept + 5);
}

// Rounds planned together are placed together: one batch, one call back with both.
TEST(PrefetchFeedTest, PlacePublishesTheNextStepsReplicasAtTargetZero) {
  std::vector<PlanRequest> requests;
  for (double imbalance : {0.7, 0.4}) {
    sim::CaseOptions o;
    o.ranks = 8;
    o.experts = 32;
    o.imbalance = imbalance;
    requests.push_back(sim::GenerateCase(o)->request);
  }
  PlannerSlots slots(PlannerRegistry::BuiltIn(), nullptr);
  ASSERT_TRUE(slots.Set("taot", {}, 4).ok());
  PrefetchFeed feed(true);
  std::vector<std::shared_ptr<const Prefetch>> got;
  int calls = 0;
  feed.WhenPublished(0, [&](PrefetchFeed::Prefetches batch) {
    got = std::move(batch);
    ++calls;
  });
  const RoundKey planned[] = {{9, 3}, {9, 4}};
  const PlanRequest* batch[] = {&requests[0], &requests[1]};
  feed.Place(planned, batch, *slots.current(), absl::InfiniteFuture());
  EXPECT_EQ(calls, 1);
  ASSERT_EQ(got.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    PlanRequest zero = requests[i];
    zero.target_imbalance_pct = 0;
    const Plan expected = RunPlanner(**PlannerRegistry::BuiltIn().Create("taot"), zero)->plan;
    ASSERT_FALSE(expected.replicas.empty());
    EXPECT_EQ(got[i]->key, (RoundKey{10, planned[i].layer}));
    EXPECT_EQ(got[i]->replicas, expected.replicas);
    EXPECT_EQ(got[i]->identity.hash, PlanHash(Plan{expected.replicas, {}, false, std::nullopt}));
    EXPECT_EQ(got[i]->identity.version, 4u);
    EXPECT_EQ(got[i]->identity.provenance, Provenance::kPushedReplicas);
    EXPECT_EQ(got[i]->sequence, i + 1);
  }
}

}  // namespace
}  // namespace taot::server

// The Gloo transport and the exchanges over it: R ranks as threads of this process, connected over
// loopback TCP through an in-memory store (the same code paths as separate processes).
#include <gtest/gtest.h>


#include <functional>
#include <thread>

#include "taot/client/agreement.h"
#include "gloo_ranks.h"
#include "taot/client/gloo_transport.h"
#include "taot/client/in_process_transport.h"
#include "taot/client/replica_exchange.h"
#include "taot/client/replica_moves.h"

namespace taot::client {
namespace {

enum class Kind { kGloo, kInProcess };

// Runs body(transport) on `ranks` connected ranks, one thread each, over the in-process transport.
void OnInProcessRanks(int ranks, const std::function<void(Transport&)>& body) {
  std::vector<std::unique_ptr<Transport>> transports = ConnectInProcess(ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back([&, r] { body(*transports[r]); });
  for (std::thread& t : threads) t.join();
}

// Runs body(transport) on `ranks` connected ranks, one thread each.
void OnRanks(int ranks, const std::function<void(Transport&)>& body, Kind kind = Kind::kGloo) {
  if (kind == Kind::kInProcess) return OnInProcessRanks(ranks, body);
  OnGlooRanks(ranks, [&](std::shared_ptr<Transport> transport) { body(*transport); });
}

// Every transport, the same contract.
class TransportTest : public ::testing::TestWithParam<Kind> {};
INSTANTIATE_TEST_SUITE_P(Transports, TransportTest, ::testing::Values(Kind::kGloo, Kind::kInProcess),
                         [](const auto& p) { return p.param == Kind::kGloo ? "gloo" : "in_process"; });

TEST_P(TransportTest, AllGatherPutsEveryRanksRowInRankOrder) {
  OnRanks(4, [](Transport& t) {
    const std::vector<int64_t> mine = {t.rank(), -t.rank(), int64_t{1} << 40};
    std::vector<int64_t> all(12);
    ASSERT_TRUE(t.AllGather(mine, all, absl::Seconds(10)).ok());
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ(all[3 * r], r);
      EXPECT_EQ(all[3 * r + 1], -r);
      EXPECT_EQ(all[3 * r + 2], int64_t{1} << 40);
    }
    std::vector<int64_t> wrong(5);
    EXPECT_EQ(t.AllGather(mine, wrong, absl::Seconds(1)).code(), absl::StatusCode::kInvalidArgument);
    // Back to back: each collective sees its own rows.
    for (int64_t round = 0; round < 20; ++round) {
      std::vector<int64_t> again(4);
      ASSERT_TRUE(t.AllGather(std::vector<int64_t>{round * 10 + t.rank()}, again, absl::Seconds(10)).ok());
      for (int r = 0; r < 4; ++r) ASSERT_EQ(again[r], round * 10 + r);
    }
  }, GetParam());
}

TEST(GlooTransportTest, BadOptionsAreRefusedByName) {
  gloo::rendezvous::HashStore store;
  GlooOptions o;
  o.rank = 3;
  o.size = 2;
  EXPECT_NE(ConnectGlooThroughStore(o, store).status().message().find("rank: must be in [0, 2)"), std::string::npos);
  o.rank = 0;
  EXPECT_NE(ConnectGlooThroughDirectory(o, "/nonexistent/dir").status().message().find("directory"), std::string::npos);
}

TEST(AgreementTest, AllRanksReachTheSameVerdict) {
  OnRanks(4, [](Transport& t) {
    // Provenance and reason are each rank's own story: only version and hash must agree.
    const Provenance from = t.rank() == 1 ? Provenance::kLocalPlan : Provenance::kDaemonRound;
    absl::StatusOr<bool> same = AllHoldTheSamePlan(t, {3, 0xabc, from, ""}, absl::Seconds(10));
    ASSERT_TRUE(same.ok());
    EXPECT_TRUE(*same);
    // Rank 2 holds another plan: everyone sees the disagreement.
    const PlanIdentity mine{3, t.rank() == 2 ? 0xabdu : 0xabcu, Provenance::kDaemonRound, ""};
    same = AllHoldTheSamePlan(t, mine, absl::Seconds(10));
    ASSERT_TRUE(same.ok());
    EXPECT_FALSE(*same);
  });
}

// 4 ranks, 8 experts (2 per rank), 2 slots each; expert e's weights are all float(e + 1).
TEST_P(TransportTest, WeightsReachTheirSlotsAndGradientsComeHomeAdded) {
  constexpr int kExperts = 8;
  constexpr size_t kFloats = 1000;
  Plan plan;
  plan.replicas = {{0, 2}, {0, 3}, {5, 0}, {7, 0}, {1, 1}};
  OnRanks(4, [&](Transport& t) {
    std::vector<std::vector<float>> home(2, std::vector<float>(kFloats)), slots(2, std::vector<float>(kFloats, -1));
    for (int i = 0; i < 2; ++i) std::fill(home[i].begin(), home[i].end(), static_cast<float>(t.rank() * 2 + i + 1));
    ExpertBuffers weights{kFloats * sizeof(float), {home[0].data(), home[1].data()}, {slots[0].data(), slots[1].data()}};
    MovedBytes moved;
    absl::StatusOr<std::unique_ptr<PendingExchange>> pending = StartWeightMoves(t, plan, kExperts, weights, &moved);
    ASSERT_TRUE(pending.ok()) << pending.status();
    ASSERT_TRUE((*pending)->Wait(absl::Seconds(10)).ok());
    const std::vector<int> mine = GuestSlots(plan, t.rank());
    for (size_t s = 0; s < mine.size(); ++s) {
      EXPECT_EQ(slots[s][0], static_cast<float>(mine[s] + 1)) << "rank " << t.rank() << " slot " << s;
      EXPECT_EQ(slots[s][kFloats - 1], static_cast<float>(mine[s] + 1));
    }
    EXPECT_EQ(moved.received, static_cast<int64_t>(mine.size() * kFloats * sizeof(float)));
    // Gradients: home ones are 1, each slot's is 10 x (guest rank + 1); homes get theirs added.
    std::vector<std::vector<float>> ghome(2, std::vector<float>(kFloats, 1)), gslots(2, std::vector<float>(kFloats));
    for (auto& g : gslots) std::fill(g.begin(), g.end(), 10.0f * static_cast<float>(t.rank() + 1));
    ExpertBuffers grads{kFloats * sizeof(float), {ghome[0].data(), ghome[1].data()}, {gslots[0].data(), gslots[1].data()}};
    ASSERT_TRUE(ReturnGradients(t, plan, kExperts, grads, absl::Seconds(10)).ok());
    for (int i = 0; i < 2; ++i) {
      const int expert = t.rank() * 2 + i;
      float want = 1;
      for (const Replica& r : plan.replicas) {
        if (r.expert == expert) want += 10.0f * static_cast<float>(r.rank + 1);
      }
      EXPECT_EQ(ghome[i][0], want) << "expert " << expert;
      EXPECT_EQ(ghome[i][kFloats - 1], want);
    }
  }, GetParam());
}

TEST(ReplicaExchangeTest, BuffersThatDoNotFitThePlanAreRefused) {
  Plan plan;
  plan.replicas = {{0, 1}, {2, 1}, {4, 1}};  // three replicas on rank 1
  OnRanks(2, [&](Transport& t) {
    std::vector<float> a(4), b(4), c(4), d(4), e(4), f(4);
    ExpertBuffers weights{16, {a.data(), b.data(), c.data(), d.data()}, {e.data(), f.data()}};
    if (t.rank() == 1) {
      auto pending = StartWeightMoves(t, plan, 8, weights);
      EXPECT_NE(pending.status().message().find("slots: the plan puts expert 4 in slot 2"), std::string::npos)
          << pending.status();
    }
    weights.home.pop_back();
    EXPECT_NE(StartWeightMoves(t, plan, 8, weights).status().message().find("home: must have E / R = 4"),
              std::string::npos);
  });
}

}  // namespace
}  // namespace taot::client

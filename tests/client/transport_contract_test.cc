// The contract every transport keeps, over the rows each test binary gives (transport_contract.h).
// All-gathers take host memory on every row; weights, gradients and Accumulate go through
// buffers of the transport's own memory.
#include "transport_contract.h"

#include "taot/client/replica_exchange.h"
#include "taot/client/replica_moves.h"

namespace taot::client {

void PrintTo(const TransportRow& row, std::ostream* os) { *os << row.name; }

std::string TransportRowName(const ::testing::TestParamInfo<TransportRow>& info) { return info.param.name; }

void TransportTest::OnRanks(int ranks, const RankBody& body) const {
  const int most = GetParam().max_ranks();
  if (most < ranks) {
    GTEST_SKIP() << GetParam().name << ": the check takes " << ranks << (ranks == 1 ? " rank" : " ranks")
                 << ", this machine connects " << most << " (" << GetParam().why_no_more << ")";
  }
  GetParam().on_ranks(ranks, body);
}

std::unique_ptr<TransportBuffer> TransportTest::Floats(Transport& transport, const std::vector<float>& values) const {
  std::unique_ptr<TransportBuffer> buffer = transport.plane().NewBuffer(values.size() * sizeof(float)).value();
  GetParam().to_buffer(buffer->data(), values.data(), values.size() * sizeof(float));
  return buffer;
}

std::vector<float> TransportTest::Read(TransportBuffer& buffer, size_t n) const {
  std::vector<float> values(n);
  GetParam().from_buffer(values.data(), buffer.data(), n * sizeof(float));
  return values;
}

std::unique_ptr<TransportBuffer> TransportTest::Bytes(Transport& transport, const std::vector<uint8_t>& values) const {
  std::unique_ptr<TransportBuffer> buffer = transport.plane().NewBuffer(values.size()).value();
  GetParam().to_buffer(buffer->data(), values.data(), values.size());
  return buffer;
}

std::vector<uint8_t> TransportTest::ReadBytes(TransportBuffer& buffer, size_t n) const {
  std::vector<uint8_t> values(n);
  GetParam().from_buffer(values.data(), buffer.data(), n);
  return values;
}

namespace {

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
  });
}

// 4 ranks, 8 experts (2 per rank), 2 slots each; expert e's weights are all float(e + 1).
TEST_P(TransportTest, WeightsReachTheirSlotsAndGradientsComeHomeAdded) {
  constexpr int kExperts = 8;
  constexpr size_t kFloats = 1000;
  Plan plan;
  plan.replicas = {{0, 2}, {0, 3}, {5, 0}, {7, 0}, {1, 1}};
  OnRanks(4, [&](Transport& t) {
    std::vector<std::unique_ptr<TransportBuffer>> home, slots;
    for (int i = 0; i < 2; ++i) {
      home.push_back(Floats(t, std::vector<float>(kFloats, static_cast<float>(t.rank() * 2 + i + 1))));
      slots.push_back(Floats(t, std::vector<float>(kFloats, -1)));
    }
    ExpertBuffers weights{
        kFloats * sizeof(float), {home[0]->data(), home[1]->data()}, {slots[0]->data(), slots[1]->data()}};
    MovedBytes moved;
    absl::StatusOr<std::unique_ptr<PendingExchange>> pending = StartWeightMoves(t, plan, kExperts, weights, &moved);
    ASSERT_TRUE(pending.ok()) << pending.status();
    ASSERT_TRUE((*pending)->Wait(absl::Seconds(10)).ok());
    const std::vector<int> mine = GuestSlots(plan, t.rank());
    for (size_t s = 0; s < mine.size(); ++s) {
      const std::vector<float> slot = Read(*slots[s], kFloats);
      EXPECT_EQ(slot[0], static_cast<float>(mine[s] + 1)) << "rank " << t.rank() << " slot " << s;
      EXPECT_EQ(slot[kFloats - 1], static_cast<float>(mine[s] + 1));
    }
    EXPECT_EQ(moved.received, static_cast<int64_t>(mine.size() * kFloats * sizeof(float)));
    // Gradients: home ones are 1, each slot's is 10 x (guest rank + 1); homes get theirs added.
    std::vector<std::unique_ptr<TransportBuffer>> ghome, gslots;
    for (int i = 0; i < 2; ++i) {
      ghome.push_back(Floats(t, std::vector<float>(kFloats, 1)));
      gslots.push_back(Floats(t, std::vector<float>(kFloats, 10.0f * static_cast<float>(t.rank() + 1))));
    }
    ExpertBuffers grads{
        kFloats * sizeof(float), {ghome[0]->data(), ghome[1]->data()}, {gslots[0]->data(), gslots[1]->data()}};
    ASSERT_TRUE(ReturnGradients(t, plan, kExperts, grads, absl::Seconds(10)).ok());
    for (int i = 0; i < 2; ++i) {
      const int expert = t.rank() * 2 + i;
      float want = 1;
      for (const Replica& r : plan.replicas) {
        if (r.expert == expert) want += 10.0f * static_cast<float>(r.rank + 1);
      }
      const std::vector<float> got = Read(*ghome[i], kFloats);
      EXPECT_EQ(got[0], want) << "expert " << expert;
      EXPECT_EQ(got[kFloats - 1], want);
    }
  });
}

TEST_P(TransportTest, ThePlaneAddsInTheTransportsMemoryInTheOrderGiven) {
  OnRanks(1, [&](Transport& t) {
    std::unique_ptr<TransportBuffer> dst = Floats(t, {1, 2, 3, 4, 5});
    std::unique_ptr<TransportBuffer> a = Floats(t, {10, 20, 30, 40, 50});
    // 2^24 + 1 is not a float: (1e8 + 1) + -1e8 is 0, 1 + (1e8 + -1e8) would be 1.
    std::unique_ptr<TransportBuffer> big = Floats(t, {1e8f, 1e8f, 1e8f, 1e8f, 1e8f});
    std::unique_ptr<TransportBuffer> minus = Floats(t, {-1e8f, -1e8f, -1e8f, -1e8f, -1e8f});
    kernels::GradSources sources;
    for (TransportBuffer* s : {a.get(), big.get(), minus.get()}) sources.source[sources.count++] = s->data();
    // The first n floats only.
    ASSERT_TRUE(t.plane().AccumulateMany(static_cast<float*>(dst->data()), sources, 4).ok());
    ASSERT_TRUE(t.plane().Finish(absl::Seconds(10)).ok());
    const float in_order = ((1.0f + 10.0f) + 1e8f) + -1e8f;
    EXPECT_EQ(Read(*dst, 5), (std::vector<float>{in_order, ((2.0f + 20.0f) + 1e8f) + -1e8f,
                                                 ((3.0f + 30.0f) + 1e8f) + -1e8f, ((4.0f + 40.0f) + 1e8f) + -1e8f, 5}));
  });
}

TEST_P(TransportTest, ExchangesOnlyWithOtherRanks) {
  OnRanks(1, [&](Transport& t) {
    std::unique_ptr<TransportBuffer> buffer = Floats(t, {1});
    const auto self = t.StartExchange({SendOp{0, buffer->data(), sizeof(float), 0}}, {});
    EXPECT_NE(self.status().message().find("sends[0].peer: must be another rank, got 0"), std::string::npos)
        << self.status();
    const auto outside = t.StartExchange({}, {RecvOp{1, buffer->data(), sizeof(float), 0}});
    EXPECT_NE(outside.status().message().find("recvs[0].peer: must be another rank, got 1"), std::string::npos)
        << outside.status();
  });
}

}  // namespace
}  // namespace taot::client

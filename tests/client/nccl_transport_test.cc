// The NCCL transport on real GPUs (label `gpu`; skips without enough devices): a row of the
// transport contract (transport_contract_test.cc) with one rank per device and its buffers in
// device memory; and its own checks: a one-rank communicator's collectives and device memory,
// and weight moves and gradient return between ranks on separate devices.
#include "taot/client/nccl_transport.h"

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <thread>

#include "taot/client/replica_exchange.h"
#include "transport_contract.h"

namespace taot::client {
namespace {

int Devices() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

// NCCL takes one rank per device: rank r on device r.
void OnNcclRanks(int ranks, const RankBody& body) {
  absl::StatusOr<NcclUniqueId> id = NewNcclUniqueId();
  ASSERT_TRUE(id.ok()) << id.status();
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      NcclOptions o;
      o.rank = r;
      o.size = ranks;
      o.device = r;
      o.id = *id;
      absl::StatusOr<std::unique_ptr<Transport>> t = ConnectNccl(o);
      ASSERT_TRUE(t.ok()) << t.status();
      body(**t);
    });
  }
  for (std::thread& t : threads) t.join();
}

void ToDevice(void* buffer, const void* host, size_t bytes) {
  ASSERT_EQ(cudaMemcpy(buffer, host, bytes, cudaMemcpyHostToDevice), cudaSuccess);
}

void FromDevice(void* host, const void* buffer, size_t bytes) {
  ASSERT_EQ(cudaMemcpy(host, buffer, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
}

INSTANTIATE_TEST_SUITE_P(Transports, TransportTest,
                         ::testing::Values(TransportRow{.name = "nccl",
                                                        .on_ranks = &OnNcclRanks,
                                                        .to_buffer = &ToDevice,
                                                        .from_buffer = &FromDevice,
                                                        .max_ranks = &Devices,
                                                        .why_no_more = "one rank per CUDA device"}),
                         TransportRowName);

TEST(NcclTransportTest, BadOptionsAreRefusedByName) {
  NcclOptions o;
  o.rank = 2;
  o.size = 2;
  EXPECT_NE(ConnectNccl(o).status().message().find("rank: must be in [0, 2)"), std::string::npos);
}

TEST(NcclTransportTest, OneRankGathersAndAccumulatesOnTheDevice) {
  if (Devices() < 1) GTEST_SKIP() << "no CUDA device";
  NcclOptions o;
  o.id = *NewNcclUniqueId();
  absl::StatusOr<std::unique_ptr<Transport>> t = ConnectNccl(o);
  ASSERT_TRUE(t.ok()) << t.status();
  std::vector<int64_t> mine = {7, -3}, all(2);
  ASSERT_TRUE((*t)->AllGather(mine, all, absl::Seconds(30)).ok());
  EXPECT_EQ(all, mine);
  auto a = *(*t)->NewBuffer(4 * sizeof(float));
  auto b = *(*t)->NewBuffer(4 * sizeof(float));
  const float ones[4] = {1, 1, 1, 1}, twos[4] = {2, 2, 2, 2};
  cudaMemcpy(a->data(), ones, sizeof ones, cudaMemcpyHostToDevice);
  cudaMemcpy(b->data(), twos, sizeof twos, cudaMemcpyHostToDevice);
  ASSERT_TRUE((*t)->Accumulate(static_cast<float*>(a->data()), static_cast<const float*>(b->data()), 4).ok());
  float out[4];
  cudaMemcpy(out, a->data(), sizeof out, cudaMemcpyDeviceToHost);
  EXPECT_EQ(out[0], 3.0f);
  EXPECT_EQ(out[3], 3.0f);
}

TEST(NcclTransportTest, WeightsAndGradientsMoveBetweenDevices) {
  if (Devices() < 2) GTEST_SKIP() << "needs two CUDA devices";
  const NcclUniqueId id = *NewNcclUniqueId();
  Plan plan;
  plan.replicas = {{0, 1}};  // expert 0 (home rank 0) to rank 1; 2 ranks, 4 experts
  constexpr size_t kFloats = 1024;
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      NcclOptions o;
      o.rank = r;
      o.size = 2;
      o.device = r;
      o.id = id;
      absl::StatusOr<std::unique_ptr<Transport>> t = ConnectNccl(o);
      ASSERT_TRUE(t.ok()) << t.status();
      std::vector<float*> home(2), slots(2);
      std::vector<float> value(kFloats);
      for (int i = 0; i < 2; ++i) {
        cudaMalloc(&home[i], kFloats * sizeof(float));
        cudaMalloc(&slots[i], kFloats * sizeof(float));
        std::fill(value.begin(), value.end(), static_cast<float>(r * 2 + i + 1));
        cudaMemcpy(home[i], value.data(), kFloats * sizeof(float), cudaMemcpyHostToDevice);
      }
      ExpertBuffers w{kFloats * sizeof(float), {home[0], home[1]}, {slots[0], slots[1]}};
      auto pending = StartWeightMoves(**t, plan, 4, w);
      ASSERT_TRUE(pending.ok()) << pending.status();
      ASSERT_TRUE((*pending)->Wait(absl::Seconds(30)).ok());
      if (r == 1) {
        cudaMemcpy(value.data(), slots[0], kFloats * sizeof(float), cudaMemcpyDeviceToHost);
        EXPECT_EQ(value[0], 1.0f);
        EXPECT_EQ(value[kFloats - 1], 1.0f);
      }
      // The guest's slot gradient (its weights) goes home and is added: expert 0 ends with 2.
      ASSERT_TRUE(ReturnGradients(**t, plan, 4, w, absl::Seconds(30)).ok());
      if (r == 0) {
        cudaMemcpy(value.data(), home[0], kFloats * sizeof(float), cudaMemcpyDeviceToHost);
        EXPECT_EQ(value[0], 2.0f);
      }
      for (int i = 0; i < 2; ++i) {
        cudaFree(home[i]);
        cudaFree(slots[i]);
      }
    });
  }
  for (std::thread& t : ranks) t.join();
}

}  // namespace
}  // namespace taot::client

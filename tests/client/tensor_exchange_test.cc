// The tensor form's checks (tensor_exchange.h, layer_tables.h): every bad layout or plan is
// refused by name before anything is sent, a workspace is not reused while its exchange is in
// flight, and loading the next plan does not disturb an exchange still in flight.
#include "taot/client/tensor_exchange.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "taot/client/in_process_transport.h"
#include "taot/client/layer_tables.h"

namespace taot::client {
namespace {

// One tensor of 16 bytes per expert, contiguous, over `buffer`.
kernels::ExpertTensors Contiguous(std::vector<char>& buffer) {
  kernels::ExpertTensors t;
  t.count = 1;
  t.tensor[0].base = buffer.data();
  t.tensor[0].expert_stride = 16;
  t.tensor[0].chunk_bytes = 16;
  return t;
}

std::string Refusal(const absl::StatusOr<std::unique_ptr<PendingExchange>>& r) {
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  return std::string(r.status().message());
}

TEST(TensorExchangeTest, BadLayoutsAreRefusedByNameAndNothingMoves) {
  std::vector<std::unique_ptr<Transport>> t = ConnectInProcess(2);
  Plan plan;
  plan.replicas = {{0, 1}};  // expert 0 (rank 0) into rank 1's slot 0
  std::vector<char> home(32, 'h'), slots(32, 's');
  const ExpertLayout good{Contiguous(home), Contiguous(slots)};
  MoveWorkspace w;
  Transport& guest = *t[1];
  LayerTables tables;

  EXPECT_EQ(StartTensorMoves(guest, tables, good, w).status().message(), "tables: no plan is loaded");
  EXPECT_NE(tables.Load(guest, plan, 3, 2).message().find("experts: must be a positive multiple of ranks (2), got 3"),
            std::string::npos);
  EXPECT_NE(tables.Load(guest, plan, 2, 0)
                .message()
                .find("plan.replicas: rank 1 holds more than the 0 slots per rank (expert 0 in slot 0)"),
            std::string::npos);
  EXPECT_FALSE(tables.loaded());
  ASSERT_TRUE(tables.Load(guest, plan, 2, 2).ok());
  EXPECT_EQ(StartTensorMoves(*t[0], tables, good, w).status().message(), "tables: were loaded on another transport");

  ExpertLayout bad = good;
  bad.home.count = 0;
  EXPECT_NE(Refusal(StartTensorMoves(guest, tables, bad, w)).find("weights.home.count: must be in [1, 8], got 0"),
            std::string::npos);
  bad = good;
  bad.slots.tensor[0].base = nullptr;
  EXPECT_NE(Refusal(StartTensorMoves(guest, tables, bad, w)).find("weights.slots.tensor[0].base: must not be null"),
            std::string::npos);
  bad = good;
  bad.slots.tensor[0].chunk_bytes = 8;
  EXPECT_NE(Refusal(StartTensorMoves(guest, tables, bad, w))
                .find("weights.slots.tensor[0]: holds 8 bytes per expert, the home tensor 16"),
            std::string::npos);
  bad = good;
  bad.home.tensor[0].chunks = int64_t{1} << 40;  // x 16 bytes: past 2^40, and past int64 later
  EXPECT_NE(Refusal(StartTensorMoves(guest, tables, bad, w))
                .find("weights.home.tensor[0]: chunks x chunk_bytes must be at most 2^40 bytes per expert"),
            std::string::npos);
  bad = good;
  bad.slots.count = 2;
  bad.slots.tensor[1] = bad.slots.tensor[0];
  EXPECT_NE(Refusal(StartTensorMoves(guest, tables, bad, w)).find("weights.slots.count: must equal"),
            std::string::npos);

  GradientLayout grads{Contiguous(slots), kernels::GradType::kBfloat16, Contiguous(home)};
  // 16 bytes of bf16 are 8 values; the home's 16 bytes are 4 float32.
  EXPECT_NE(Refusal(StartGradientReturn(guest, tables, grads, w))
                .find("gradients.slots.tensor[0]: holds 16 bytes per expert, must be 2 x the 4 float32 values"),
            std::string::npos);
  grads.slot_type = kernels::GradType::kFloat32;
  grads.home.tensor[0].chunk_bytes = 15;
  grads.slots.tensor[0].chunk_bytes = 15;
  EXPECT_NE(Refusal(StartGradientReturn(guest, tables, grads, w))
                .find("gradients.home.tensor[0].chunk_bytes: float32 needs a multiple of 4, got 15"),
            std::string::npos);
  grads.slot_type = static_cast<kernels::GradType>(7);
  EXPECT_NE(Refusal(StartGradientReturn(guest, tables, grads, w)).find("gradients.slot_type"), std::string::npos);

  EXPECT_EQ(slots, std::vector<char>(32, 's'));
  EXPECT_EQ(w.grows(), 0);
}

TEST(TensorExchangeTest, AWorkspaceWaitsForItsExchangeWhoseUnpackKeepsItsPlan) {
  std::vector<std::unique_ptr<Transport>> t = ConnectInProcess(2);
  Plan plan;
  plan.replicas = {{0, 1}, {3, 0}};
  std::vector<std::vector<char>> home(2, std::vector<char>(32)), slots(2, std::vector<char>(32, 's'));
  for (int r = 0; r < 2; ++r) {
    for (int i = 0; i < 32; ++i) home[r][i] = static_cast<char>(r * 64 + i);
  }
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      MoveWorkspace w;
      LayerTables tables;
      ASSERT_TRUE(tables.Load(*t[r], plan, 4, 2).ok());
      const ExpertLayout layout{Contiguous(home[r]), Contiguous(slots[r])};
      absl::StatusOr<std::unique_ptr<PendingExchange>> first = StartTensorMoves(*t[r], tables, layout, w);
      ASSERT_TRUE(first.ok()) << first.status();
      const auto again = StartTensorMoves(*t[r], tables, layout, w);
      EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition) << again.status();
      // The next plan may load while the moves are in flight: the unpack keeps the old plan's list.
      Plan next;
      next.replicas = {{1, 1}, {2, 0}};
      ASSERT_TRUE(tables.Load(*t[r], next, 4, 2).ok());
      ASSERT_TRUE((*first)->Wait(absl::Seconds(10)).ok());
      // Each rank's slot 0 holds the other's replicated expert: rank 1 gets expert 0, rank 0 expert 3.
      const int from = 1 - r;
      for (int i = 0; i < 16; ++i) EXPECT_EQ(slots[r][i], static_cast<char>(from * 64 + (r == 1 ? 0 : 16) + i));
    });
  }
  for (std::thread& r : ranks) r.join();
}

}  // namespace
}  // namespace taot::client

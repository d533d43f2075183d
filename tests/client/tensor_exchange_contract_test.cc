// The tensor form of the exchanges (tensor_exchange.h) as part of the transport contract: on
// every row, strided and contiguous tensors reach their slots byte for byte, and bf16 gradients
// come home added into fp32 in ascending guest order. The oracle lays out and reads back every
// tensor here, element by element, independent of the kernels' address arithmetic.
#include <cstring>
#include <functional>
#include <tuple>

#include "taot/client/replica_moves.h"
#include "taot/client/tensor_exchange.h"
#include "transport_contract.h"

namespace taot::client {
namespace {

using kernels::ExpertTensor;
using kernels::ExpertTensors;

constexpr int kRanks = 4;
constexpr int kExperts = 8;  // 2 per rank
constexpr int kSlots = 2;

// Expert 0 has three guests (packed once, sent three times); rank 0 hosts two experts.
Plan ThePlan() {
  Plan plan;
  plan.replicas = {{0, 1}, {0, 2}, {0, 3}, {1, 1}, {5, 0}, {7, 0}};
  return plan;
}

ExpertTensor Shape(int64_t expert_stride, int64_t chunks, int64_t chunk_bytes, int64_t chunk_stride) {
  ExpertTensor t;
  t.expert_stride = expert_stride;
  t.chunks = chunks;
  t.chunk_bytes = chunk_bytes;
  t.chunk_stride = chunk_stride;
  return t;
}

size_t SpanBytes(const ExpertTensor& t, int experts) {
  return static_cast<size_t>((experts - 1) * t.expert_stride + (t.chunks - 1) * t.chunk_stride + t.chunk_bytes);
}

// Memory for `experts` experts of `shape`, expert x's bytes in chunk order given by packed(x);
// bytes no expert owns are `fill`.
std::vector<uint8_t> Lay(const ExpertTensor& shape, int experts, const std::function<std::vector<uint8_t>(int)>& packed,
                         uint8_t fill = 0xEE) {
  std::vector<uint8_t> raw(SpanBytes(shape, experts), fill);
  for (int x = 0; x < experts; ++x) {
    const std::vector<uint8_t> bytes = packed(x);
    for (int64_t c = 0; c < shape.chunks; ++c) {
      for (int64_t b = 0; b < shape.chunk_bytes; ++b) {
        raw[x * shape.expert_stride + c * shape.chunk_stride + b] = bytes[c * shape.chunk_bytes + b];
      }
    }
  }
  return raw;
}

std::vector<uint8_t> Unlay(const ExpertTensor& shape, const std::vector<uint8_t>& raw, int x) {
  std::vector<uint8_t> bytes;
  for (int64_t c = 0; c < shape.chunks; ++c) {
    for (int64_t b = 0; b < shape.chunk_bytes; ++b)
      bytes.push_back(raw[x * shape.expert_stride + c * shape.chunk_stride + b]);
  }
  return bytes;
}

std::vector<uint8_t> WeightBytes(int expert, int tensor, int64_t n) {
  std::vector<uint8_t> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(expert * 37 + tensor * 101 + i * 3 + 1);
  return v;
}

template <typename T>
std::vector<uint8_t> AsBytes(const std::vector<T>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

std::vector<float> AsFloats(const std::vector<uint8_t>& bytes) {
  std::vector<float> values(bytes.size() / sizeof(float));
  std::memcpy(values.data(), bytes.data(), bytes.size());
  return values;
}

uint16_t Bf16(float exact) {
  uint32_t bits;
  std::memcpy(&bits, &exact, sizeof bits);
  return static_cast<uint16_t>(bits >> 16);
}

// A guest's gradient values: large values of opposite signs around a small one, so that any
// other order of the adds gives other sums.
float GuestScale(int guest) {
  switch (guest) {
    case 1:
      return 16777216.0f;  // 2^24
    case 3:
      return -16777216.0f;  // -2^24
    default:
      return 1.0f;
  }
}
float Power(int64_t j) { return static_cast<float>(1 << (j % 3)); }

TEST_P(TransportTest, TensorsReachTheirSlotsAndBf16GradientsComeHomeInGuestOrder) {
  const Plan plan = ThePlan();
  OnRanks(kRanks, [&](Transport& t) {
    const int me = t.rank();
    const int per_rank = kExperts / kRanks;
    // Tensor 0: 30 bytes per expert, contiguous on both sides. Tensor 1: 48 bytes per expert,
    // [4 rows, experts, 12 bytes] at home and contiguous in the slots.
    const ExpertTensor home0 = Shape(30, 1, 30, 0), slot0 = Shape(30, 1, 30, 0);
    const ExpertTensor home1 = Shape(12, 4, 12, 24), slot1 = Shape(48, 1, 48, 0);
    auto home_bytes = [&](int k, const ExpertTensor& s) {
      return Lay(s, per_rank, [&](int x) { return WeightBytes(me * per_rank + x, k, s.chunks * s.chunk_bytes); });
    };
    std::unique_ptr<TransportBuffer> h0 = Bytes(t, home_bytes(0, home0)), h1 = Bytes(t, home_bytes(1, home1));
    std::unique_ptr<TransportBuffer> s0 = Bytes(t, std::vector<uint8_t>(SpanBytes(slot0, kSlots), 0xEE));
    std::unique_ptr<TransportBuffer> s1 = Bytes(t, std::vector<uint8_t>(SpanBytes(slot1, kSlots), 0xEE));
    ExpertLayout weights;
    weights.home.count = weights.slots.count = 2;
    weights.home.tensor[0] = home0;
    weights.home.tensor[1] = home1;
    weights.slots.tensor[0] = slot0;
    weights.slots.tensor[1] = slot1;
    weights.home.tensor[0].base = h0->data();
    weights.home.tensor[1].base = h1->data();
    weights.slots.tensor[0].base = s0->data();
    weights.slots.tensor[1].base = s1->data();

    MoveWorkspace workspace;
    LayerTables tables;
    const DataPlane::Copies before = t.plane().copies();
    for (int round = 0; round < 2; ++round) {
      ASSERT_TRUE(tables.Load(t, plan, kExperts, kSlots).ok());
      MovedBytes moved;
      absl::StatusOr<std::unique_ptr<PendingExchange>> pending =
          StartTensorMoves(t, tables, weights, workspace, std::nullopt, &moved);
      ASSERT_TRUE(pending.ok()) << pending.status();
      ASSERT_TRUE((*pending)->Wait(absl::Seconds(10)).ok());
      const std::vector<int> mine = GuestSlots(plan, me);
      EXPECT_EQ(moved.received, static_cast<int64_t>(mine.size()) * 78) << "rank " << me;
      const std::vector<uint8_t> got0 = ReadBytes(*s0, SpanBytes(slot0, kSlots));
      const std::vector<uint8_t> got1 = ReadBytes(*s1, SpanBytes(slot1, kSlots));
      for (int s = 0; s < kSlots; ++s) {
        const bool used = s < static_cast<int>(mine.size());
        const std::vector<uint8_t> want0 = used ? WeightBytes(mine[s], 0, 30) : std::vector<uint8_t>(30, 0xEE);
        const std::vector<uint8_t> want1 = used ? WeightBytes(mine[s], 1, 48) : std::vector<uint8_t>(48, 0xEE);
        EXPECT_EQ(Unlay(slot0, got0, s), want0) << "rank " << me << " slot " << s;
        EXPECT_EQ(Unlay(slot1, got1, s), want1) << "rank " << me << " slot " << s;
      }
    }
    // One upload per plan loaded, nothing else; the second round reuses the first one's memory.
    EXPECT_EQ(t.plane().copies().uploads, before.uploads + 2);
    EXPECT_EQ(t.plane().copies().downloads, before.downloads);
    EXPECT_EQ(workspace.grows(), 1);

    // Gradients: slot tensor 0 is bf16 [3 rows, slots, 5] (strided), tensor 1 bf16 contiguous
    // [slots, 12]; home tensor 0 is fp32 [experts, 15], tensor 1 fp32 [4 rows, experts, 3].
    const ExpertTensor gslot0 = Shape(10, 3, 10, 20), gslot1 = Shape(24, 1, 24, 0);
    const ExpertTensor ghome0 = Shape(60, 1, 60, 0), ghome1 = Shape(12, 4, 12, 24);
    const std::vector<int> mine = GuestSlots(plan, me);
    auto slot_grads = [&](const ExpertTensor& s, int64_t values) {
      return Lay(s, kSlots, [&](int slot) {
        std::vector<uint16_t> v(values, Bf16(0.0f));
        if (slot < static_cast<int>(mine.size())) {
          for (int64_t j = 0; j < values; ++j) v[j] = Bf16(GuestScale(me) * Power(j));
        }
        return AsBytes(v);
      });
    };
    auto home_grads = [&](const ExpertTensor& s, int64_t values) {
      return Lay(s, per_rank, [&](int) {
        std::vector<float> v(values);
        for (int64_t j = 0; j < values; ++j) v[j] = Power(j);
        return AsBytes(v);
      });
    };
    std::unique_ptr<TransportBuffer> gs0 = Bytes(t, slot_grads(gslot0, 15)), gs1 = Bytes(t, slot_grads(gslot1, 12));
    std::unique_ptr<TransportBuffer> gh0 = Bytes(t, home_grads(ghome0, 15)), gh1 = Bytes(t, home_grads(ghome1, 12));
    GradientLayout grads;
    grads.slot_type = kernels::GradType::kBfloat16;
    grads.slots.count = grads.home.count = 2;
    grads.slots.tensor[0] = gslot0;
    grads.slots.tensor[1] = gslot1;
    grads.home.tensor[0] = ghome0;
    grads.home.tensor[1] = ghome1;
    grads.slots.tensor[0].base = gs0->data();
    grads.slots.tensor[1].base = gs1->data();
    grads.home.tensor[0].base = gh0->data();
    grads.home.tensor[1].base = gh1->data();
    absl::StatusOr<std::unique_ptr<PendingExchange>> pending = StartGradientReturn(t, tables, grads, workspace);
    ASSERT_TRUE(pending.ok()) << pending.status();
    ASSERT_TRUE((*pending)->Wait(absl::Seconds(10)).ok());
    const std::vector<uint8_t> got0 = ReadBytes(*gh0, SpanBytes(ghome0, per_rank));
    const std::vector<uint8_t> got1 = ReadBytes(*gh1, SpanBytes(ghome1, per_rank));
    for (int x = 0; x < per_rank; ++x) {
      const int expert = me * per_rank + x;
      for (auto [shape, got, values] : {std::tuple{ghome0, &got0, 15}, {ghome1, &got1, 12}}) {
        const std::vector<float> sums = AsFloats(Unlay(shape, *got, x));
        for (int64_t j = 0; j < values; ++j) {
          float want = Power(j);
          for (int guest = 0; guest < kRanks; ++guest) {
            for (const Replica& r : plan.replicas) {
              if (r.expert == expert && r.rank == guest) want = want + GuestScale(guest) * Power(j);
            }
          }
          ASSERT_EQ(sums[j], want) << "rank " << me << " expert " << expert << " value " << j;
        }
      }
    }
  });
}

}  // namespace
}  // namespace taot::client

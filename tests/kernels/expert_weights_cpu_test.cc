// Pack/unpack and the ordered gradient adds on the CPU, against oracles written from the
// layouts' index arithmetic (a [rows, experts, cols] array read element by element), not from
// the kernels' offsets.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "taot/kernels/accumulate.h"
#include "taot/kernels/expert_weights.h"

namespace taot::kernels {
namespace {

std::vector<uint8_t> Bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Two tensors of 5 experts: w1 as [experts, 6, 4] bf16 (contiguous per expert), w2 as
// [3, experts, 7] fp32 (the expert dimension in the middle: three runs per expert).
constexpr int kExperts = 5;
struct Layout {
  std::vector<uint8_t> w1 = Bytes(kExperts * 6 * 4 * 2, 1), w2 = Bytes(3 * kExperts * 7 * 4, 2);
  ExpertTensors tensors() {
    ExpertTensors t;
    t.count = 2;
    t.tensor[0] = {w1.data(), 6 * 4 * 2, 1, 6 * 4 * 2, 0};
    t.tensor[1] = {w2.data(), 7 * 4, 3, 7 * 4, kExperts * 7 * 4};
    return t;
  }
  // Expert x's bytes as the oracle reads them: w1[x] whole, then w2[r][x] for each row r.
  std::vector<uint8_t> ExpertOf(int x) const {
    std::vector<uint8_t> out(w1.begin() + x * 48, w1.begin() + (x + 1) * 48);
    for (int r = 0; r < 3; ++r) {
      const size_t at = (static_cast<size_t>(r) * kExperts + x) * 28;
      out.insert(out.end(), w2.begin() + static_cast<std::ptrdiff_t>(at),
                 w2.begin() + static_cast<std::ptrdiff_t>(at + 28));
    }
    return out;
  }
};

TEST(ExpertWeightsCpuTest, PackGathersListedExpertsAndUnpackPutsThemBack) {
  Layout home;
  ExpertTensors t = home.tensors();
  ASSERT_EQ(PackedExpertBytes(t), 48 + 3 * 28);
  const std::vector<int32_t> experts = {3, 0, 4};
  std::vector<uint8_t> packed(3 * 132, 0xEE);
  ASSERT_TRUE(PackExpertsCpu(t, experts.data(), 3, packed.data()));
  std::vector<uint8_t> want;
  for (int x : experts) {
    const std::vector<uint8_t> one = home.ExpertOf(x);
    want.insert(want.end(), one.begin(), one.end());
  }
  EXPECT_EQ(packed, want);
  // Into another rank's slots 1, 2 and 0 of the same layout: each slot now holds its expert.
  Layout guest;
  std::fill(guest.w1.begin(), guest.w1.end(), 0);
  std::fill(guest.w2.begin(), guest.w2.end(), 0);
  ExpertTensors g = guest.tensors();
  const std::vector<int32_t> slots = {1, 2, 0};
  ASSERT_TRUE(UnpackExpertsCpu(g, slots.data(), 3, packed.data()));
  for (size_t i = 0; i < slots.size(); ++i) EXPECT_EQ(guest.ExpertOf(slots[i]), home.ExpertOf(experts[i]));
  EXPECT_EQ(guest.ExpertOf(3), std::vector<uint8_t>(132, 0));  // untouched
  // Nothing listed, nothing copied; a tensor count out of range is refused.
  ASSERT_TRUE(PackExpertsCpu(t, experts.data(), 0, packed.data()));
  t.count = 0;
  EXPECT_FALSE(PackExpertsCpu(t, experts.data(), 3, packed.data()));
  t.count = kMaxTensors + 1;
  EXPECT_FALSE(UnpackExpertsCpu(t, experts.data(), 3, packed.data()));
}

uint16_t Bf16Of(float f) {  // truncation: exact for the values used below
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return static_cast<uint16_t>(bits >> 16);
}

TEST(AccumulateCpuTest, Bf16GradientsAddIntoFp32InTheOrderGiven) {
  EXPECT_EQ(Bf16ToFloat(Bf16Of(1.5f)), 1.5f);
  EXPECT_EQ(Bf16ToFloat(Bf16Of(-0.0078125f)), -0.0078125f);
  std::vector<float> dst = {1e8f, 1.0f, -3.0f};
  const std::vector<uint16_t> a = {Bf16Of(1.0f), Bf16Of(0.5f), Bf16Of(2.0f)};
  GradSources bf16;
  bf16.type = GradType::kBfloat16;
  bf16.source[0] = a.data();
  bf16.count = 1;
  ASSERT_TRUE(AccumulateManyCpu(dst.data(), bf16, 3));
  EXPECT_EQ(dst, (std::vector<float>{1e8f + 1.0f, 1.5f, -1.0f}));  // 1e8 + 1 rounds to 1e8 in fp32
  // Order matters in fp32: (1e8 + 1) - 1e8 = 0, while (1e8 - 1e8) + 1 = 1. The given order is kept.
  std::vector<float> x = {1e8f}, y = {1e8f};
  const std::vector<float> one = {1.0f}, minus = {-1e8f};
  GradSources first_one, first_minus;
  first_one.count = first_minus.count = 2;
  first_one.source[0] = one.data();
  first_one.source[1] = minus.data();
  first_minus.source[0] = minus.data();
  first_minus.source[1] = one.data();
  ASSERT_TRUE(AccumulateManyCpu(x.data(), first_one, 1));
  ASSERT_TRUE(AccumulateManyCpu(y.data(), first_minus, 1));
  EXPECT_EQ(x[0], 0.0f);
  EXPECT_EQ(y[0], 1.0f);
  GradSources too_many;
  too_many.count = kMaxSources + 1;
  EXPECT_FALSE(AccumulateManyCpu(dst.data(), too_many, 3));
}

}  // namespace
}  // namespace taot::kernels

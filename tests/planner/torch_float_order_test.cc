// The expected values are what torch 1.13.1 (Debian 12, CPU, AVX2) returns for the same inputs;
// each differs from a plain left-to-right float sum or a first-index argmax, so the order is
// what is checked.
#include "planners/torch_float_order.h"

#include <gtest/gtest.h>

#include <vector>

namespace taot::planners {
namespace {

// Small fractions on top of a few 1e7 entries, so the order of additions shows in the rounding.
std::vector<float> SpikyVector(int n, int step, int spike_every) {
  std::vector<float> v;
  for (int i = 0; i < n; ++i)
    v.push_back(static_cast<float>((i * step) % 97 * 0.37 + (i % spike_every == 0 ? 1e7 : 0.0)));
  return v;
}

TEST(TorchFloatOrderTest, SumAddsEightLanesThenTheTailFirst) {
  EXPECT_EQ(TorchSum(SpikyVector(20, 31, 7)), 30000348.0f);    // left to right: 30000350
  EXPECT_EQ(TorchSum(SpikyVector(100, 29, 9)), 120001760.0f);  // left to right: 120001750
  EXPECT_EQ(TorchSum(SpikyVector(6, 13, 4)), 20000072.0f);
  EXPECT_EQ(TorchSum({}), 0.0f);
}

TEST(TorchFloatOrderTest, ColumnSumsFollowTheOuterReduction) {
  const int n = 12;
  std::vector<float> m;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j)
      m.push_back(static_cast<float>((i * 37 + j * 11) % 97 * 0.013 + ((i + j) % 5 == 0 ? 3e6 : 0.0)));
  }
  const std::vector<float> expected = {9000006.0f, 6000007.5f, 6000007.5f, 6000007.0f, 9000008.0f, 9000007.0f,
                                       6000008.0f, 6000008.5f, 6000008.0f, 9000007.0f, 9000008.0f, 6000006.5f};
  EXPECT_EQ(TorchColumnSums(m, n, n), expected);
}

TEST(TorchFloatOrderTest, TopOneOfAShortColumnNeedNotBeTheFirstMaximum) {
  const std::vector<float> short_column = {3, 2, 2, 3, 2, 3, 3, 0, 0, 1, 1, 3, 3, 0, 1, 3, 0, 3, 0, 1, 3, 1, 1, 1,
                                           2, 1, 3, 1, 1, 2, 2, 2, 2, 3, 3, 3, 2, 2, 1, 3, 1, 0, 3, 0, 3, 2, 0, 0};
  EXPECT_EQ(TorchTopOne(short_column), 35);
  const std::vector<float> long_column = {1, 0, 0, 2, 3, 1, 3, 3, 3, 2, 1, 2, 1, 1, 1, 0, 3, 0, 0, 0, 3, 2,
                                          3, 0, 2, 1, 1, 0, 2, 3, 2, 0, 2, 1, 3, 3, 0, 2, 3, 3, 2, 2, 0, 2,
                                          1, 0, 0, 2, 2, 2, 2, 3, 2, 1, 2, 2, 0, 0, 2, 1, 2, 1, 0, 0};
  EXPECT_EQ(TorchTopOne(long_column), 4);
}

}  // namespace
}  // namespace taot::planners

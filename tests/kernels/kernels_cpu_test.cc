// The data-plane kernels' CPU references: the tests always run them.
#include <gtest/gtest.h>

#include <vector>

#include "taot/kernels/accumulate.h"

namespace taot::kernels {
namespace {

TEST(AccumulateCpuTest, AddsElementWise) {
  std::vector<float> dst = {1, 2, 3}, src = {0.5f, -2, 10};
  AccumulateCpu(dst.data(), src.data(), 3);
  EXPECT_EQ(dst, (std::vector<float>{1.5f, 0, 13}));
  AccumulateCpu(dst.data(), src.data(), 0);  // nothing
  EXPECT_EQ(dst, (std::vector<float>{1.5f, 0, 13}));
}

}  // namespace
}  // namespace taot::kernels

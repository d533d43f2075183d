// The data-plane kernels' CPU references: the tests always run them.
#include <gtest/gtest.h>

#include <vector>

#include "taot/kernels/accumulate.h"
#include "taot/kernels/words.h"

namespace taot::kernels {
namespace {

TEST(AccumulateCpuTest, AddsElementWise) {
  std::vector<float> dst = {1, 2, 3}, src = {0.5f, -2, 10};
  AccumulateCpu(dst.data(), src.data(), 3);
  EXPECT_EQ(dst, (std::vector<float>{1.5f, 0, 13}));
  AccumulateCpu(dst.data(), src.data(), 0);  // nothing
  EXPECT_EQ(dst, (std::vector<float>{1.5f, 0, 13}));
}

TEST(WriteWordsCpuTest, WritesTheCountGivenAndRefusesABadCount) {
  std::vector<int64_t> dst(kMaxWords + 1, 7);
  Words words;
  words.value[0] = -1;
  words.value[1] = int64_t{1} << 62;
  words.count = 2;
  ASSERT_TRUE(WriteWordsCpu(dst.data(), words));
  EXPECT_EQ(dst, (std::vector<int64_t>{-1, int64_t{1} << 62, 7, 7, 7}));
  for (int32_t bad : {-1, kMaxWords + 1}) {
    words.count = bad;
    EXPECT_FALSE(WriteWordsCpu(dst.data(), words)) << bad;
  }
  EXPECT_EQ(dst, (std::vector<int64_t>{-1, int64_t{1} << 62, 7, 7, 7}));  // nothing written
}

}  // namespace
}  // namespace taot::kernels

#include "planners/array_block.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

namespace taot::planners {
namespace {

// A block laid out as PlacementState lays out its own: 8-byte values, then 4-byte ones.
constexpr size_t kWide = 3, kNarrow = 5;
constexpr size_t kNarrowAt = kWide * sizeof(int64_t);
constexpr size_t kBytes = kNarrowAt + kNarrow * sizeof(int);

void Fill(ArrayBlock& block, int64_t seed) {
  for (size_t i = 0; i < kWide; ++i) block.At<int64_t>(0)[i] = seed * 100 + static_cast<int64_t>(i);
  for (size_t i = 0; i < kNarrow; ++i) block.At<int>(kNarrowAt)[i] = static_cast<int>(seed) * 10 + static_cast<int>(i);
}

void ExpectFilled(const ArrayBlock& block, int64_t seed) {
  for (size_t i = 0; i < kWide; ++i) EXPECT_EQ(block.At<int64_t>(0)[i], seed * 100 + static_cast<int64_t>(i)) << i;
  for (size_t i = 0; i < kNarrow; ++i) {
    EXPECT_EQ(block.At<int>(kNarrowAt)[i], static_cast<int>(seed) * 10 + static_cast<int>(i)) << i;
  }
}

TEST(ArrayBlockTest, ACopyHasEveryArrayAndIsIndependent) {
  ArrayBlock a;
  a.Resize(kBytes);
  Fill(a, 1);
  ArrayBlock b = a;
  EXPECT_EQ(b.size(), kBytes);
  ExpectFilled(b, 1);
  Fill(b, 2);
  ExpectFilled(a, 1);
  ExpectFilled(b, 2);
}

TEST(ArrayBlockTest, CopyingIntoABlockWithRoomKeepsItsStorage) {
  ArrayBlock a, b;
  a.Resize(kBytes);
  Fill(a, 3);
  b.Resize(2 * kBytes);
  const int64_t* storage = b.At<int64_t>(0);
  b = a;
  EXPECT_EQ(b.At<int64_t>(0), storage);  // no allocation: the copy is one memcpy
  EXPECT_EQ(b.size(), kBytes);
  ExpectFilled(b, 3);
  const ArrayBlock& same = b;
  b = same;  // self-assignment leaves it as it is
  ExpectFilled(b, 3);
}

TEST(ArrayBlockTest, AMoveTakesTheStorageAndLeavesAnEmptyBlock) {
  ArrayBlock a;
  a.Resize(kBytes);
  Fill(a, 4);
  const int64_t* storage = a.At<int64_t>(0);
  ArrayBlock b = std::move(a);
  EXPECT_EQ(b.At<int64_t>(0), storage);
  ExpectFilled(b, 4);
  EXPECT_EQ(a.size(), 0u);  // the moved-from block is empty, not one that claims the storage
  EXPECT_EQ(a.At<int64_t>(0), nullptr);
  a.Resize(kBytes);  // and it can be used again
  Fill(a, 5);
  ExpectFilled(a, 5);
  std::swap(a, b);
  ExpectFilled(a, 4);
  ExpectFilled(b, 5);
}

TEST(ArrayBlockTest, ShrinkingKeepsTheStorageAndGrowingPastItsRoomReplacesIt) {
  ArrayBlock a;
  a.Resize(kBytes);
  Fill(a, 6);
  const int64_t* storage = a.At<int64_t>(0);
  a.Resize(kNarrowAt);
  EXPECT_EQ(a.At<int64_t>(0), storage);
  EXPECT_EQ(a.At<int64_t>(0)[2], 602);
  a.Resize(kBytes);  // back within its room
  EXPECT_EQ(a.At<int64_t>(0), storage);
  ArrayBlock small;
  small.Resize(kNarrowAt);
  small = a;  // more than its room: it grows to the copy's size
  EXPECT_EQ(small.size(), kBytes);
  ExpectFilled(small, 6);
}

}  // namespace
}  // namespace taot::planners

#include "planners/array_block.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <utility>

namespace taot::planners {
namespace {

// A block laid out as PlacementState lays out its own: 8-byte values, then 4-byte ones.
constexpr size_t kWide = 3, kNarrow = 5;
constexpr size_t kNarrowAt = kWide * sizeof(int64_t);
constexpr size_t kBytes = kNarrowAt + kNarrow * sizeof(int);

std::span<int64_t> Wide(ArrayBlock& block) { return block.Array<int64_t>(0, kWide); }
std::span<int> Narrow(ArrayBlock& block) { return block.Array<int>(kNarrowAt, kNarrow); }

void Fill(ArrayBlock& block, int64_t seed) {
  for (size_t i = 0; i < kWide; ++i) Wide(block)[i] = seed * 100 + static_cast<int64_t>(i);
  for (size_t i = 0; i < kNarrow; ++i) Narrow(block)[i] = static_cast<int>(seed) * 10 + static_cast<int>(i);
}

void ExpectFilled(const ArrayBlock& block, int64_t seed) {
  const std::span<const int64_t> wide = block.Array<int64_t>(0, kWide);
  const std::span<const int> narrow = block.Array<int>(kNarrowAt, kNarrow);
  ASSERT_EQ(wide.size(), kWide);
  ASSERT_EQ(narrow.size(), kNarrow);
  for (size_t i = 0; i < kWide; ++i) EXPECT_EQ(wide[i], seed * 100 + static_cast<int64_t>(i)) << i;
  for (size_t i = 0; i < kNarrow; ++i) EXPECT_EQ(narrow[i], static_cast<int>(seed) * 10 + static_cast<int>(i)) << i;
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
  const int64_t* storage = Wide(b).data();
  b = a;
  EXPECT_EQ(Wide(b).data(), storage);  // no allocation: the copy is one memcpy
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
  const int64_t* storage = Wide(a).data();
  ArrayBlock b = std::move(a);
  EXPECT_EQ(Wide(b).data(), storage);
  ExpectFilled(b, 4);
  EXPECT_EQ(a.size(), 0u);  // the moved-from block is empty, not one that claims the storage
  EXPECT_TRUE(Wide(a).empty());
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
  const int64_t* storage = Wide(a).data();
  a.Resize(kNarrowAt);
  EXPECT_EQ(Wide(a).data(), storage);
  EXPECT_EQ(Wide(a)[2], 602);
  a.Resize(kBytes);  // back within its room
  EXPECT_EQ(Wide(a).data(), storage);
  ArrayBlock small;
  small.Resize(kNarrowAt);
  const int64_t* small_storage = Wide(small).data();
  small = a;  // more than its room: it grows to the copy's size
  EXPECT_NE(Wide(small).data(), small_storage);
  EXPECT_EQ(small.size(), kBytes);
  ExpectFilled(small, 6);
  a.Renew(kBytes);  // a new layout: new storage, whatever the room
  EXPECT_NE(Wide(a).data(), storage);
  EXPECT_EQ(a.size(), kBytes);
}

// An array the block does not hold whole is empty, so that indexing it fails the library's
// bounds check rather than reading the next array or past the end.
TEST(ArrayBlockTest, AnArrayPastTheBlocksSizeIsEmpty) {
  ArrayBlock a;
  EXPECT_TRUE(Wide(a).empty());  // never sized
  a.Resize(kNarrowAt + sizeof(int));
  EXPECT_EQ(Wide(a).size(), kWide);
  EXPECT_TRUE(Narrow(a).empty());  // one int short
  EXPECT_EQ(a.Array<int>(kNarrowAt, 1).size(), 1u);
  a.Resize(kBytes);
  EXPECT_EQ(Narrow(a).size(), kNarrow);
}

}  // namespace
}  // namespace taot::planners

#include "planners/sorted_place.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

namespace taot::planners {
namespace {

using Bin = std::pair<int64_t, int>;  // as the placement's index of open bins: (room, rank)

// Against the plain form: take the entry out and insert the new value where it sorts. Every
// size up to 40, every position, and new values anywhere (before all, after all, next door, far
// away), as galloping in either direction must land on the one sorted place.
TEST(SortedPlaceTest, MovesTheEntryWhereErasingAndInsertingPutsIt) {
  std::mt19937 random(7);
  int moved_far = 0;
  for (int n = 1; n <= 40; ++n) {
    for (int at = 0; at < n; ++at) {
      for (int trial = 0; trial < 20; ++trial) {
        std::vector<Bin> bins;
        for (int r = 0; r < n; ++r) bins.push_back({std::uniform_int_distribution<int64_t>(0, 30)(random), r});
        std::sort(bins.begin(), bins.end());
        const Bin value{std::uniform_int_distribution<int64_t>(-5, 35)(random), bins[at].second};
        std::vector<Bin> want = bins;
        want.erase(want.begin() + at);
        want.insert(std::lower_bound(want.begin(), want.end(), value), value);
        const auto before = std::lower_bound(bins.begin(), bins.end(), value) - bins.begin();
        moved_far += std::abs(before - at) > 4;
        MoveToSortedPlace(bins, static_cast<size_t>(at), value);
        ASSERT_EQ(bins, want) << "n " << n << ", at " << at << ", new room " << value.first;
      }
    }
  }
  EXPECT_GT(moved_far, 1000) << "the cases must move entries past several others";
}

}  // namespace
}  // namespace taot::planners

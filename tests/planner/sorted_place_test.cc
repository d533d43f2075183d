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

// Against std::stable_sort: ranges of every length up to 30, nearly sorted (a few entries moved
// a few places) and shuffled, with many equal keys, so that an unstable sort would show.
TEST(InsertionSortTest, SortsAsStableSortDoes) {
  std::mt19937 random(11);
  const auto by_key = [](const Bin& a, const Bin& b) { return a.first < b.first; };
  int reordered = 0;
  for (int n = 0; n <= 30; ++n) {
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<Bin> items;
      for (int i = 0; i < n; ++i) items.push_back({std::uniform_int_distribution<int64_t>(0, 6)(random), i});
      if (trial % 2 == 0) {
        std::sort(items.begin(), items.end(), by_key);
        for (int k = 0; k < 3 && n > 1; ++k) {
          const int at = std::uniform_int_distribution<int>(0, n - 2)(random);
          std::swap(items[static_cast<size_t>(at)], items[static_cast<size_t>(at) + 1]);
        }
      } else {
        std::shuffle(items.begin(), items.end(), random);
      }
      std::vector<Bin> want = items;
      std::stable_sort(want.begin(), want.end(), by_key);
      reordered += want != items;
      InsertionSort(items.begin(), items.end(), by_key);
      ASSERT_EQ(items, want) << "n " << n << " trial " << trial;
    }
  }
  EXPECT_GT(reordered, 800);  // of 1,240 ranges, most needed sorting
}

}  // namespace
}  // namespace taot::planners

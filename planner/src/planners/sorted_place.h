// Keeping a sorted vector sorted when one entry's key changes, and sorting one that comes nearly
// sorted.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace taot::planners {

// Replaces sorted[at] by `value` and moves it to the place that keeps `sorted` sorted, shifting
// the entries in between by one. `value` must differ from every other entry. The place is found
// by galloping out from `at` (O(log distance) comparisons) and the shift is one block move: a
// bin whose room changes by a whole piece can pass many others, and walking it there one entry
// at a time cost 3.5% of an EP256 plan more (docs/performance.md).
template <typename T>
void MoveToSortedPlace(std::vector<T>& sorted, size_t at, const T& value) {
  const auto first = sorted.begin();
  if (at > 0 && value < sorted[at - 1]) {
    size_t lo = 0, hi = at - 1, step = 1;  // the place p: lo <= p <= hi, and sorted[hi] > value
    while (step <= hi) {
      const size_t j = hi - step;
      if (sorted[j] < value) {
        lo = j + 1;
        break;
      }
      hi = j;
      step *= 2;
    }
    const auto p =
        std::lower_bound(first + static_cast<std::ptrdiff_t>(lo), first + static_cast<std::ptrdiff_t>(hi), value);
    std::move_backward(p, first + static_cast<std::ptrdiff_t>(at), first + static_cast<std::ptrdiff_t>(at) + 1);
    *p = value;
  } else if (at + 1 < sorted.size() && sorted[at + 1] < value) {
    // The first entry past value, q: lo < q <= hi, and sorted[lo] < value.
    size_t lo = at + 1, hi = sorted.size(), step = 1;
    while (lo + step < sorted.size()) {
      const size_t j = lo + step;
      if (value < sorted[j]) {
        hi = j;
        break;
      }
      lo = j;
      step *= 2;
    }
    const auto q =
        std::lower_bound(first + static_cast<std::ptrdiff_t>(lo) + 1, first + static_cast<std::ptrdiff_t>(hi), value);
    std::move(first + static_cast<std::ptrdiff_t>(at) + 1, q, first + static_cast<std::ptrdiff_t>(at));
    *(q - 1) = value;
  } else {
    sorted[at] = value;
  }
}

// Sorts [first, last) by `less`, stably and without a buffer, by insertion: for short ranges that
// come nearly sorted (a node's mates after a few rooms shrink), where an entry moves past a few
// at most and the test that it is in place is one comparison. std::stable_sort would allocate its
// buffer at every call.
template <typename It, typename Less>
void InsertionSort(It first, It last, Less less) {
  if (first == last) return;
  for (It i = first + 1; i != last; ++i) {
    if (!less(*i, *(i - 1))) continue;
    auto moved = std::move(*i);
    It j = i;
    do {
      *j = std::move(*(j - 1));
      --j;
    } while (j != first && less(moved, *(j - 1)));
    *j = std::move(moved);
  }
}

}  // namespace taot::planners

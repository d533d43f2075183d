// Sorting items that usually come ordered by a leading key already, as planners emit a plan's
// assignments of one source: by expert, with only the few entries of one expert out of order.
#pragma once

#include <algorithm>

namespace taot {

// Sorts [first, last) by `less`, which must order by `key_less` first. Where the range is already
// ordered by `key_less`, only each run of equal leading keys is sorted (linear for runs of a few
// entries); otherwise the whole range is. The same order as std::sort(first, last, less) up to
// items equal under `less`.
template <typename It, typename KeyLess, typename Less>
void SortPresorted(It first, It last, KeyLess key_less, Less less) {
  if (!std::is_sorted(first, last, key_less)) {
    std::sort(first, last, less);
    return;
  }
  for (It run = first; run != last;) {
    It end = run + 1;
    while (end != last && !key_less(*run, *end)) ++end;
    if (end - run > 1) std::sort(run, end, less);
    run = end;
  }
}

}  // namespace taot

// A counting sort: items grouped by a small integer key, each group in the items' order. Linear,
// where a comparison sort of a plan's thousands of entries was most of the checks' time.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

namespace taot {

// Group k of `items` (key(item) in [0, keys)) is out[starts[k], starts[k + 1]), each entry
// make(item); `starts` gets keys + 1 offsets.
template <typename Item, typename Key, typename Make, typename Out>
void GroupByKey(std::span<const Item> items, size_t keys, Key key, Make make, std::vector<size_t>& starts,
                std::vector<Out>& out) {
  starts.assign(keys + 1, 0);
  for (const Item& item : items) ++starts[static_cast<size_t>(key(item)) + 1];
  for (size_t k = 0; k < keys; ++k) starts[k + 1] += starts[k];
  std::vector<size_t> next(starts.begin(), starts.end() - 1);
  out.resize(items.size());
  for (const Item& item : items) out[next[static_cast<size_t>(key(item))]++] = make(item);
}

}  // namespace taot

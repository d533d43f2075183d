#include "planners/sequence_cover.h"

#include <algorithm>
#include <cstdint>

namespace taot::planners {

void SequenceCover::Walk(PlacementState& state, const std::vector<int>& hot, const std::vector<int>& bins) {
  const int per_rank = state.experts_per_rank();
  size_t i = 0, j = 0;
  while (i < hot.size() && j < bins.size()) {
    const int h = hot[i], c = bins[j];
    if (state.surplus(h) == 0) {
      ++i;
      continue;
    }
    if (c == h || !state.IsOpen(c)) {
      ++j;
      continue;
    }
    int e = -1;
    for (int x = h * per_rank; x < (h + 1) * per_rank; ++x) {
      if (state.left(x) > 0 && !state.Holds(x, c) && (e < 0 || state.left(x) > state.left(e))) e = x;
    }
    if (e < 0) {
      ++i;  // h has nothing c can take: leave it to the clean-up
      continue;
    }
    state.AddPiece(h, e, c, std::min({state.surplus(h), state.spare(c), state.left(e)}));
  }
}

void SequenceCover::Cover(PlacementState& state, const std::vector<int>& nodes, Order order) {
  const Topology& topo = state.topology();
  std::vector<int>& hot = hot_;
  std::vector<int>& bins = bins_;
  auto largest_left = [&](int h) {
    const int e = state.LargestExpert(h);
    return e < 0 ? int64_t{0} : state.left(e);
  };
  auto by_surplus = [&](int a, int b) { return state.surplus(a) < state.surplus(b); };
  for (int n : nodes) {
    hot.clear();
    bins.clear();
    for (int r : topo.ranks_of_node(n)) {
      if (state.surplus(r) > 0) hot.push_back(r);
      if (state.IsOpen(r)) bins.push_back(r);
    }
    switch (order.hot) {
      case Order::kBiggestExpertLast:
        std::stable_sort(hot.begin(), hot.end(), [&](int a, int b) { return largest_left(a) < largest_left(b); });
        break;
      case Order::kBiggestSurplusLast:
        std::stable_sort(hot.begin(), hot.end(), by_surplus);
        break;
      case Order::kRankOrder:
        break;
    }
    if (order.roomiest_bin_last) {
      std::stable_sort(bins.begin(), bins.end(), [&](int a, int b) { return state.spare(a) < state.spare(b); });
    }
    Walk(state, hot, bins);
  }
  hot.clear();
  bins.clear();
  for (int r = 0; r < state.ranks(); ++r) {
    if (state.surplus(r) > 0) hot.push_back(r);
    if (state.IsOpen(r)) bins.push_back(r);
  }
  if (order.smallest_remainder_first) {
    std::stable_sort(hot.begin(), hot.end(), by_surplus);
    std::stable_sort(bins.begin(), bins.end(), [&](int a, int b) { return state.spare(a) > state.spare(b); });
  }
  Walk(state, hot, bins);
}

}  // namespace taot::planners

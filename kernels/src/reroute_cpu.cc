#include <algorithm>

#include "taot/kernels/reroute.h"

namespace taot::kernels {
namespace {

template <typename Id>
void CountExpertsOf(const Id* ids, int64_t n, int32_t experts, int64_t* counts, RouteCheck* check) {
  std::fill(counts, counts + experts, int64_t{0});
  check->first_bad_pair = n;
  check->first_short_expert = experts;
  for (int64_t i = 0; i < n; ++i) {
    const Id e = ids[i];
    if (e < 0 || e >= experts) {
      check->first_bad_pair = std::min(check->first_bad_pair, i);
      continue;
    }
    ++counts[e];
  }
}

}  // namespace

void CountExpertsCpu(const int32_t* ids, int64_t n, int32_t experts, int64_t* counts, RouteCheck* check) {
  CountExpertsOf(ids, n, experts, counts, check);
}

void CountExpertsCpu(const int64_t* ids, int64_t n, int32_t experts, int64_t* counts, RouteCheck* check) {
  CountExpertsOf(ids, n, experts, counts, check);
}

size_t RerouteWorkspaceBytes(int64_t, const RouteTable& table) {
  const size_t experts = static_cast<size_t>(table.experts);
  const size_t virtual_experts = static_cast<size_t>(VirtualExperts(table));
  return (experts + virtual_experts) * sizeof(int64_t) + (2 * experts + virtual_experts) * sizeof(int32_t);
}

// One pass in pair order, so a cursor per expert replaces VirtualIdOfPair's scan of its guests:
// the same rule, O(1) per pair.
void RerouteCpu(const int32_t* expert_ids, int64_t n, const RouteTable& table, int32_t* virtual_expert,
                int32_t* dest_rank, int64_t* send_counts, int64_t* order, void* workspace, RouteCheck* check) {
  const int32_t experts = table.experts;
  const int32_t virtual_experts = VirtualExperts(table);
  const int32_t local = LocalExperts(table);
  int64_t* seen = static_cast<int64_t*>(workspace);  // pairs of each expert so far
  int64_t* starts = seen + experts;                  // per virtual expert: its pairs, then where they start
  int32_t* cursor = reinterpret_cast<int32_t*>(starts + virtual_experts);  // the guest being filled
  int32_t* home = cursor + experts;                                        // the expert's home virtual id
  int32_t* rank_of = home + experts;                                       // a virtual id's rank
  check->first_bad_pair = n;
  check->first_short_expert = experts;
  for (int32_t e = 0; e < experts; ++e) {
    seen[e] = 0;
    cursor[e] = table.guest_begin[e];
    home[e] = HomeVirtualId(table, e);
  }
  for (int32_t v = 0; v < virtual_experts; ++v) {
    starts[v] = 0;
    rank_of[v] = v / local;
  }
  std::fill(send_counts, send_counts + table.ranks, int64_t{0});
  for (int64_t i = 0; i < n; ++i) {
    const int32_t e = expert_ids[i];
    if (e < 0 || e >= experts) {
      check->first_bad_pair = i;
      return;
    }
    const int64_t k = seen[e]++;
    const int32_t end = table.guest_begin[e + 1];
    int32_t j = cursor[e];
    while (j < end && k >= table.pair_end[j]) ++j;
    cursor[e] = j;
    const int32_t v = j < end ? table.virtual_id[j] : home[e];
    virtual_expert[i] = v;
    dest_rank[i] = rank_of[v];
    ++send_counts[rank_of[v]];
    ++starts[v];
  }
  for (int32_t e = 0; e < experts; ++e) {
    const int32_t last = table.guest_begin[e + 1] - 1;
    if (last >= table.guest_begin[e] && table.pair_end[last] > seen[e]) {
      check->first_short_expert = e;
      return;
    }
  }
  // A counting sort by virtual id: stable, so pairs of one virtual expert keep their order.
  int64_t run = 0;
  for (int32_t v = 0; v < virtual_experts; ++v) {
    const int64_t count = starts[v];
    starts[v] = run;
    run += count;
  }
  for (int64_t i = 0; i < n; ++i) order[starts[virtual_expert[i]]++] = i;
}

}  // namespace taot::kernels

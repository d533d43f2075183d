// The canonical order of a plan's assignments (Canonicalize): by source, then expert, rank and
// tokens. Shared by Canonicalize and the check that makes a plan canonical as it checks it
// (CanonicalizeAndValidate), so that both put entries in exactly the same order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "group_by_key.h"
#include "taot/planner/plan.h"

namespace taot {

// (expert, rank, tokens): the order inside one source's assignments.
inline bool BeforeInSource(const Assignment& a, const Assignment& b) {
  if (a.expert != b.expert) return a.expert < b.expert;
  if (a.rank != b.rank) return a.rank < b.rank;
  return a.tokens < b.tokens;
}

// (expert, rank) as one integer in their order (each int32 offset into unsigned range): two
// entries' keys compare in one instruction, where comparing field by field branches at every
// change of expert, which in a source's entries comes every entry or two.
inline uint64_t ExpertRankKey(const Assignment& a) {
  constexpr uint32_t kOffset = 0x80000000u;
  return static_cast<uint64_t>(static_cast<uint32_t>(a.expert) ^ kOffset) << 32 |
         (static_cast<uint32_t>(a.rank) ^ kOffset);
}

// Sorts one source's entries [first, last) by BeforeInSource. A planner's come by expert with
// only each expert's few entries out of rank order (taot's: the node's guests, then the other
// nodes'), so they are sorted in place by insertion, comparing packed keys: a pass whose branch
// only fires at an entry out of order. Finding each expert's run and sorting it apart mispredicted
// at the end of every run: a third of the canonical order's time at EP64 3 hot x30 (perf). Entries
// not by expert (another planner's order), or so far out of order that insertion would move them
// more than a few places each on average (a long run in reverse: quadratic), go to std::sort.
template <typename It>
void SortSourceEntries(It first, It last) {
  const auto expert_less = [](const Assignment& a, const Assignment& b) { return a.expert < b.expert; };
  if (!std::is_sorted(first, last, expert_less)) {
    std::sort(first, last, BeforeInSource);
    return;
  }
  const auto before = [](const Assignment& a, uint64_t a_key, const Assignment& b) {
    const uint64_t b_key = ExpertRankKey(b);
    return a_key < b_key || (a_key == b_key && a.tokens < b.tokens);
  };
  auto moves_left = 8 * (last - first);
  for (It i = first + (first != last); i < last; ++i) {
    const uint64_t key = ExpertRankKey(*i);
    if (!before(*i, key, *(i - 1))) continue;
    const Assignment moved = *i;
    It j = i;
    do {
      *j = *(j - 1);
      --j;
    } while (j != first && before(moved, key, *(j - 1)));
    *j = moved;
    moves_left -= i - j;
    if (moves_left < 0) {
      std::sort(first, last, BeforeInSource);  // the entries are all there, some already placed
      return;
    }
  }
}

// Puts assignments whose sources are all in [0, sources) in canonical order: a counting sort by
// source (a few thousand entries over at most R sources: linear, where a comparison sort of the
// whole was most of RunPlanner's time on burst plans), then each source's few entries by the
// rest of the key. The order std::sort gives.
inline void SortSourcesInRange(std::vector<Assignment>& assignments, size_t sources) {
  std::vector<size_t> start;
  // Made as a copy, which GroupByKey then overwrites: plain copies, where sizing an empty vector
  // constructs each entry in a loop whose counter stays on the stack (half of this function's
  // time at EP64-128).
  std::vector<Assignment> sorted(assignments);
  GroupByKey(
      std::span<const Assignment>(assignments), sources, [](const Assignment& a) { return a.source; },
      [](const Assignment& a) { return a; }, start, sorted);
  for (size_t s = 0; s < sources; ++s) {
    SortSourceEntries(sorted.begin() + static_cast<std::ptrdiff_t>(start[s]),
                      sorted.begin() + static_cast<std::ptrdiff_t>(start[s + 1]));
  }
  assignments.swap(sorted);
}

}  // namespace taot

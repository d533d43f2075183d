// The canonical order of a plan's assignments (Canonicalize): by source, then expert, rank and
// tokens. Shared by Canonicalize and the check that makes a plan canonical as it checks it
// (CanonicalizeAndValidate), so that both put entries in exactly the same order.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

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

// Whether entry `a`, whose ExpertRankKey is `a_key`, comes before `b` in a source's order.
inline bool BeforeKeyed(const Assignment& a, uint64_t a_key, const Assignment& b) {
  const uint64_t b_key = ExpertRankKey(b);
  return a_key < b_key || (a_key == b_key && a.tokens < b.tokens);
}

// Puts assignments whose sources are all in [0, sources) in canonical order (the order std::sort
// gives): a counting sort by source (a few thousand entries over at most R sources: linear, where
// a comparison sort of the whole was most of RunPlanner's time on burst plans) whose scatter
// places each entry among its source's entries so far by insertion. A planner's come by expert,
// with only each expert's few entries out of rank order (taot's: the node's guests, then the
// other nodes'), so an entry moves past one or two at most, and a branch fires only at one out of
// order: one pass, where sorting each source's entries after the scatter was a second (7% more
// of this function's instructions on an EP64 one-hot x30 burst's plans). Entries so far out of
// order that they would move more than a few places each on average (another planner's order; a
// long run in reverse: quadratic) are scattered plainly from there and each source's sorted after.
inline void SortSourcesInRange(std::vector<Assignment>& assignments, size_t sources) {
  std::vector<size_t> start(sources + 1, 0);
  for (const Assignment& a : assignments) ++start[static_cast<size_t>(a.source) + 1];
  for (size_t s = 0; s < sources; ++s) start[s + 1] += start[s];
  std::vector<size_t> next(start.begin(), start.end() - 1);
  // Made as a copy, which the scatter then overwrites: plain copies, where sizing an empty vector
  // constructs each entry in a loop whose counter stays on the stack (half of this function's
  // time at EP64-128).
  std::vector<Assignment> sorted(assignments);
  auto moves_left = 8 * static_cast<std::ptrdiff_t>(assignments.size());
  auto it = assignments.begin();
  for (; it != assignments.end() && moves_left >= 0; ++it) {
    const auto s = static_cast<size_t>(it->source);
    const uint64_t key = ExpertRankKey(*it);
    size_t j = next[s]++;
    for (; j > start[s] && BeforeKeyed(*it, key, sorted[j - 1]); --j, --moves_left) sorted[j] = sorted[j - 1];
    sorted[j] = *it;
  }
  if (it != assignments.end()) {
    for (; it != assignments.end(); ++it) sorted[next[static_cast<size_t>(it->source)]++] = *it;
    for (size_t s = 0; s < sources; ++s) {
      std::sort(sorted.begin() + static_cast<std::ptrdiff_t>(start[s]),
                sorted.begin() + static_cast<std::ptrdiff_t>(start[s + 1]), BeforeInSource);
    }
  }
  assignments.swap(sorted);
}

}  // namespace taot

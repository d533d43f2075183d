// The canonical order of a plan's assignments (Canonicalize): by source, then expert, rank and
// tokens. Shared by Canonicalize and the check that makes a plan canonical as it checks it
// (CanonicalizeAndValidate), so that both put entries in exactly the same order.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "group_by_key.h"
#include "sort_presorted.h"
#include "taot/planner/plan.h"

namespace taot {

// (expert, rank, tokens): the order inside one source's assignments.
inline bool BeforeInSource(const Assignment& a, const Assignment& b) {
  if (a.expert != b.expert) return a.expert < b.expert;
  if (a.rank != b.rank) return a.rank < b.rank;
  return a.tokens < b.tokens;
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
  // A planner's entries of one source usually come by expert already (taot's do): then only the
  // few entries of each expert are sorted.
  const auto expert_less = [](const Assignment& a, const Assignment& b) { return a.expert < b.expert; };
  for (size_t s = 0; s < sources; ++s) {
    SortPresorted(sorted.begin() + static_cast<std::ptrdiff_t>(start[s]),
                  sorted.begin() + static_cast<std::ptrdiff_t>(start[s + 1]), expert_less, BeforeInSource);
  }
  assignments.swap(sorted);
}

}  // namespace taot

#include "taot/planner/plan.h"

#include <algorithm>
#include <span>
#include <vector>

#include "group_by_key.h"
#include "sort_presorted.h"

namespace taot {
namespace {

// (expert, rank, tokens): the order inside one source's assignments.
bool BeforeInSource(const Assignment& a, const Assignment& b) {
  if (a.expert != b.expert) return a.expert < b.expert;
  if (a.rank != b.rank) return a.rank < b.rank;
  return a.tokens < b.tokens;
}

// Assignments in canonical order: a counting sort by source (a few thousand entries over at most
// R sources: linear, where a comparison sort of the whole was most of RunPlanner's time on burst
// plans), then each source's few entries by the rest of the key. The order std::sort gives.
void SortAssignments(std::vector<Assignment>& assignments) {
  if (std::is_sorted(assignments.begin(), assignments.end())) return;
  int32_t sources = 0;
  for (const Assignment& a : assignments) {
    // Not a valid plan's (a negative source, or one beyond any count of entries that a counting
    // sort would pay for): the plain sort orders anything, without a table as long as the source.
    if (a.source < 0 || static_cast<size_t>(a.source) >= assignments.size()) {
      std::sort(assignments.begin(), assignments.end());
      return;
    }
    sources = std::max(sources, a.source + 1);
  }
  std::vector<size_t> start;
  // Made as a copy, which GroupByKey then overwrites: plain copies, where sizing an empty vector
  // constructs each entry in a loop whose counter stays on the stack (half of this function's
  // time at EP64-128).
  std::vector<Assignment> sorted(assignments);
  GroupByKey(
      std::span<const Assignment>(assignments), static_cast<size_t>(sources),
      [](const Assignment& a) { return a.source; }, [](const Assignment& a) { return a; }, start, sorted);
  // A planner's entries of one source usually come by expert already (taot's do): then only the
  // few entries of each expert are sorted.
  const auto expert_less = [](const Assignment& a, const Assignment& b) { return a.expert < b.expert; };
  for (size_t s = 0; s < static_cast<size_t>(sources); ++s) {
    SortPresorted(sorted.begin() + static_cast<std::ptrdiff_t>(start[s]),
                  sorted.begin() + static_cast<std::ptrdiff_t>(start[s + 1]), expert_less, BeforeInSource);
  }
  assignments.swap(sorted);
}

}  // namespace

void Canonicalize(Plan& plan) {
  if (!std::is_sorted(plan.replicas.begin(), plan.replicas.end()))
    std::sort(plan.replicas.begin(), plan.replicas.end());
  SortAssignments(plan.assignments);
}

}  // namespace taot

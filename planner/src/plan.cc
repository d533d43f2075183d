#include "taot/planner/plan.h"

#include <algorithm>
#include <span>
#include <vector>

#include "group_by_key.h"

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
    if (a.source < 0) {  // not a valid plan's; the plain sort orders anything
      std::sort(assignments.begin(), assignments.end());
      return;
    }
    sources = std::max(sources, a.source + 1);
  }
  std::vector<size_t> start;
  std::vector<Assignment> sorted;
  GroupByKey(
      std::span<const Assignment>(assignments), static_cast<size_t>(sources),
      [](const Assignment& a) { return a.source; }, [](const Assignment& a) { return a; }, start, sorted);
  for (size_t s = 0; s < static_cast<size_t>(sources); ++s) {
    std::sort(sorted.begin() + static_cast<std::ptrdiff_t>(start[s]),
              sorted.begin() + static_cast<std::ptrdiff_t>(start[s + 1]), BeforeInSource);
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

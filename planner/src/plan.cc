#include "taot/planner/plan.h"

#include <algorithm>
#include <span>
#include <vector>

#include "canonical_order.h"

namespace taot {
namespace {

// Assignments in canonical order (canonical_order.h), any sources allowed.
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
  SortSourcesInRange(assignments, static_cast<size_t>(sources));
}

}  // namespace

void Canonicalize(Plan& plan) {
  if (!std::is_sorted(plan.replicas.begin(), plan.replicas.end()))
    std::sort(plan.replicas.begin(), plan.replicas.end());
  SortAssignments(plan.assignments);
}

}  // namespace taot

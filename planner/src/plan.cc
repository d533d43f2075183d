#include "taot/planner/plan.h"

#include <algorithm>

namespace taot {

void Canonicalize(Plan& plan) {
  std::sort(plan.replicas.begin(), plan.replicas.end());
  std::sort(plan.assignments.begin(), plan.assignments.end());
}

}  // namespace taot

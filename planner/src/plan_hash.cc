#include "taot/planner/plan_hash.h"

#include "plan_hasher.h"

namespace taot {

uint64_t PlanHash(const Plan& plan) {
  AssignmentFieldBits fields;
  for (const Assignment& a : plan.assignments) fields.Add(a);
  PlanHasher h(plan, fields);
  for (const Assignment& a : plan.assignments) h.Add(a);
  return h.hash();
}

}  // namespace taot

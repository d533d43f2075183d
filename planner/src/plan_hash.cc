#include "taot/planner/plan_hash.h"

#include "taot/planner/fnv1a.h"

namespace taot {

uint64_t PlanHash(const Plan& plan) {
  Fnv1a h;
  h.AddInt64(static_cast<int64_t>(plan.replicas.size()));
  for (const Replica& r : plan.replicas) {
    h.AddInt64(r.expert);
    h.AddInt64(r.rank);
  }
  h.AddInt64(static_cast<int64_t>(plan.assignments.size()));
  for (const Assignment& a : plan.assignments) {
    h.AddInt64(a.source);
    h.AddInt64(a.expert);
    h.AddInt64(a.rank);
    h.AddInt64(a.tokens);
  }
  return h.hash();
}

}  // namespace taot

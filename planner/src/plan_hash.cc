#include "taot/planner/plan_hash.h"

namespace taot {
namespace {

class Fnv1a {
 public:
  void Add(int64_t value) {
    auto bits = static_cast<uint64_t>(value);
    for (int i = 0; i < 8; ++i, bits >>= 8) {
      hash_ ^= bits & 0xff;
      hash_ *= 0x100000001b3ULL;
    }
  }
  uint64_t hash() const { return hash_; }

 private:
  uint64_t hash_ = 0xcbf29ce484222325ULL;
};

}  // namespace

uint64_t PlanHash(const Plan& plan) {
  Fnv1a h;
  h.Add(static_cast<int64_t>(plan.replicas.size()));
  for (const Replica& r : plan.replicas) {
    h.Add(r.expert);
    h.Add(r.rank);
  }
  h.Add(static_cast<int64_t>(plan.assignments.size()));
  for (const Assignment& a : plan.assignments) {
    h.Add(a.source);
    h.Add(a.expert);
    h.Add(a.rank);
    h.Add(a.tokens);
  }
  return h.hash();
}

}  // namespace taot

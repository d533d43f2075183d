// PlanHash (taot/planner/plan_hash.h) in steps: the replicas and the entry count at once, then
// each assignment in canonical order, so that a pass over the canonical plan that does other
// work per entry can hash it too. The hash is one chain of dependent multiplies (four cycles a
// byte); work in the same loop runs in its shadow, where a pass of its own after the check was
// as long as the check (docs/performance.md, "A new load at every layer, and the checks and the
// hash in one walk").
#pragma once

#include <cstdint>

#include "taot/planner/fnv1a.h"
#include "taot/planner/plan.h"

namespace taot {

// The bits of each assignment field's values ORed together: each field is hashed with the byte
// count of its widest value over the plan (Fnv1a::AddInt64Bytes: the same hash as AddInt64's,
// value by value, where AddInt64's trip count changed from value to value and mispredicted).
struct AssignmentFieldBits {
  uint64_t source = 0, expert = 0, rank = 0, tokens = 0;
  void Add(const Assignment& a) {
    source |= static_cast<uint64_t>(static_cast<int64_t>(a.source));
    expert |= static_cast<uint64_t>(static_cast<int64_t>(a.expert));
    rank |= static_cast<uint64_t>(static_cast<int64_t>(a.rank));
    tokens |= static_cast<uint64_t>(a.tokens);
  }
};

class PlanHasher {
 public:
  // Hashes the replicas and the count of assignments; `fields` covers every assignment.
  PlanHasher(const Plan& plan, const AssignmentFieldBits& fields) {
    uint64_t experts = 0, ranks = 0;
    for (const Replica& r : plan.replicas) {
      experts |= static_cast<uint64_t>(static_cast<int64_t>(r.expert));
      ranks |= static_cast<uint64_t>(static_cast<int64_t>(r.rank));
    }
    h_.AddInt64(static_cast<int64_t>(plan.replicas.size()));
    const int expert_bytes = Fnv1a::FieldBytes(experts), rank_bytes = Fnv1a::FieldBytes(ranks);
    for (const Replica& r : plan.replicas) {
      h_.AddInt64Bytes(r.expert, expert_bytes);
      h_.AddInt64Bytes(r.rank, rank_bytes);
    }
    h_.AddInt64(static_cast<int64_t>(plan.assignments.size()));
    source_bytes_ = Fnv1a::FieldBytes(fields.source);
    expert_bytes_ = Fnv1a::FieldBytes(fields.expert);
    rank_bytes_ = Fnv1a::FieldBytes(fields.rank);
    token_bytes_ = Fnv1a::FieldBytes(fields.tokens);
  }
  // The next assignment, in canonical order.
  void Add(const Assignment& a) {
    h_.AddInt64Bytes(a.source, source_bytes_);
    h_.AddInt64Bytes(a.expert, expert_bytes_);
    h_.AddInt64Bytes(a.rank, rank_bytes_);
    h_.AddInt64Bytes(a.tokens, token_bytes_);
  }
  uint64_t hash() const { return h_.hash(); }

 private:
  Fnv1a h_;
  int source_bytes_ = 1, expert_bytes_ = 1, rank_bytes_ = 1, token_bytes_ = 1;
};

}  // namespace taot

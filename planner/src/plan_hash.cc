#include "taot/planner/plan_hash.h"

#include <cstdint>

#include "taot/planner/fnv1a.h"

namespace taot {
namespace {

// The integer's 8 bytes as AddInt64 reads them (a negative int32 sign-extended).
uint64_t Bits(int64_t value) { return static_cast<uint64_t>(value); }

}  // namespace

// Each field is hashed with the byte count of its widest value over the plan
// (Fnv1a::AddInt64Bytes: the same hash as AddInt64's, value by value). The hash is one chain of
// dependent multiplies; AddInt64's trip count, which changed from value to value, mispredicted
// on about every entry and took 2x the time on large plans (docs/performance.md, "The plan's
// hash"). Finding the widths is a pass of ORs that the chain does not wait on.
uint64_t PlanHash(const Plan& plan) {
  uint64_t replica_experts = 0, replica_ranks = 0;
  for (const Replica& r : plan.replicas) {
    replica_experts |= Bits(r.expert);
    replica_ranks |= Bits(r.rank);
  }
  uint64_t sources = 0, experts = 0, ranks = 0, tokens = 0;
  for (const Assignment& a : plan.assignments) {
    sources |= Bits(a.source);
    experts |= Bits(a.expert);
    ranks |= Bits(a.rank);
    tokens |= Bits(a.tokens);
  }
  Fnv1a h;
  h.AddInt64(static_cast<int64_t>(plan.replicas.size()));
  const int expert_bytes = Fnv1a::FieldBytes(replica_experts), rank_bytes = Fnv1a::FieldBytes(replica_ranks);
  for (const Replica& r : plan.replicas) {
    h.AddInt64Bytes(r.expert, expert_bytes);
    h.AddInt64Bytes(r.rank, rank_bytes);
  }
  h.AddInt64(static_cast<int64_t>(plan.assignments.size()));
  const int source_bytes = Fnv1a::FieldBytes(sources), assigned_expert_bytes = Fnv1a::FieldBytes(experts),
            assigned_rank_bytes = Fnv1a::FieldBytes(ranks), token_bytes = Fnv1a::FieldBytes(tokens);
  for (const Assignment& a : plan.assignments) {
    h.AddInt64Bytes(a.source, source_bytes);
    h.AddInt64Bytes(a.expert, assigned_expert_bytes);
    h.AddInt64Bytes(a.rank, assigned_rank_bytes);
    h.AddInt64Bytes(a.tokens, token_bytes);
  }
  return h.hash();
}

}  // namespace taot

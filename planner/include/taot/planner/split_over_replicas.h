// Splitting a layer's tokens over replicas placed in advance. In the predictive mode the
// daemon places replicas from earlier steps' loads and the weights are prefetched; at the
// layer, each rank splits the actual (all-gathered) counts over those replicas with this
// function, so no planner call sits on the critical path. Deterministic: every rank computes
// the same split from the same counts.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "taot/planner/plan.h"
#include "taot/planner/plan_request.h"

namespace taot {

// A plan that uses exactly `replicas` (each listed, idle ones with no tokens): among the
// splits that minimise the maximum rank load, in whole tokens, the one whose dispatch is
// cheapest on the topology. request.resident is ignored (the replicas are what is resident);
// request.slots_per_rank() still bounds the replicas per rank. Errors name the bad replica.
// One call, with buffers of its own; a caller that splits layer after layer keeps a
// ReplicaSplitter instead.
absl::StatusOr<Plan> SplitOverReplicas(const PlanRequest& request, std::vector<Replica> replicas);

// SplitOverReplicas, the same plan bit for bit, with its buffers kept between calls: once the
// first split has sized them, a layer's split allocates only the Plan it returns and the few
// buffers of the checks and of Canonicalize (4-7 allocations at EP64, where a one-shot call made
// 151-485). Not for two threads at once: one instance per caller (a client, a simulated run).
class ReplicaSplitter {
 public:
  ReplicaSplitter();
  ~ReplicaSplitter();
  ReplicaSplitter(ReplicaSplitter&&) noexcept;
  ReplicaSplitter& operator=(ReplicaSplitter&&) noexcept;

  absl::StatusOr<Plan> Split(const PlanRequest& request, std::span<const Replica> replicas);

 private:
  struct Buffers;
  std::unique_ptr<Buffers> buffers_;
};

}  // namespace taot

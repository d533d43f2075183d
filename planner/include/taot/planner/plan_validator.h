// The rules every plan obeys, whoever made it (a built-in planner, a plugin, a file).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "absl/status/status.h"
#include "taot/planner/plan.h"
#include "taot/planner/plan_request.h"

namespace taot {

// For a valid request, checks that:
// - every replica names an expert and a rank in range, never the expert's home, no
//   (expert, rank) pair twice, and at most slots_per_rank replicas on any rank (unless lifted);
// - every assignment names a source, expert and rank in range, moves > 0 tokens, goes to a
//   rank holding a replica of the expert, and no (source, expert, rank) appears twice;
// - for every (source, expert), the tokens sent to guests never exceed load[source][expert]
//   (so tokens are conserved: the rest stay home).
// The error names the offending entry, e.g. "assignments[4]: rank 7 holds no replica of expert 12".
absl::Status ValidatePlan(const PlanRequest& request, const Plan& plan, SlotLimit limit = SlotLimit::kEnforced);

// Canonicalize, then ValidatePlan, with the same outcome (the same order; on an invalid plan the
// same error, naming the entry in canonical order) in fewer passes over the entries: one pass
// checks their ranges and whether they are canonical already, and the counting sort by source
// then needs no pass of its own to bound the sources. What every plan a trainer or the daemon
// uses goes through (RunPlanner, CheckedPlan). With `hash`, a valid plan's PlanHash goes there,
// made in the check's walk over the canonical plan (the hash's chain of multiplies then runs in
// the check's shadow).
absl::Status CanonicalizeAndValidate(const PlanRequest& request, Plan& plan, SlotLimit limit = SlotLimit::kEnforced,
                                     uint64_t* hash = nullptr);

// The replica rules alone (range, never on the home, no pair twice, at most slots_per_rank per
// rank unless lifted), for any list of replicas; errors start with `field`[i] (e.g. "resident[2]: ...").
absl::Status ValidateReplicas(const PlanRequest& request, std::span<const Replica> replicas, std::string_view field,
                              SlotLimit limit = SlotLimit::kEnforced);

}  // namespace taot

// Before any weight moves, the ranks check that they hold the same plan for a layer: a tiny
// all-gather of (version, hash). Any difference (a rank fell back to local planning, a placement
// arrived late on one rank) and every rank uses no replication for that layer, which is always
// correct; they all reach the same verdict from the same gathered values.
#pragma once

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "taot/client/transport.h"
#include "taot/planner/plan_identity.h"

namespace taot::client {

// True when every rank passed the same plan (PlanIdentity::SamePlanAs: version and hash). Errors
// are the transport's (a peer gone).
absl::StatusOr<bool> AllHoldTheSamePlan(Transport& transport, const PlanIdentity& mine, absl::Duration timeout);

}  // namespace taot::client

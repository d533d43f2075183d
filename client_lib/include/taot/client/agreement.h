// Before any weight moves, the ranks check that they hold the same plan for a layer: a tiny
// all-gather of (version, hash). Any difference (a rank fell back to local planning, a placement
// arrived late on one rank) and every rank uses no replication for that layer, which is always
// correct; they all reach the same verdict from the same gathered values.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "taot/client/transport.h"

namespace taot::client {

struct PlanFingerprint {
  uint64_t version = 0;
  uint64_t hash = 0;
  bool operator==(const PlanFingerprint&) const = default;
};

// True when every rank passed the same fingerprint. Errors are the transport's (a peer gone).
absl::StatusOr<bool> AllHoldTheSamePlan(Transport& transport, PlanFingerprint mine, absl::Duration timeout);

}  // namespace taot::client

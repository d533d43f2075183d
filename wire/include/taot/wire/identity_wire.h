// A plan's identity (taot/planner/plan_identity.h) on the wire. taot.v1.Plan carries a daemon
// round's (version, hash, and the fallback flag with its reason); taot.v1.Prefetch a pushed
// replica set's (version, hash).
#pragma once

#include "taot/planner/plan_identity.h"
#include "taot/v1/planner.pb.h"

namespace taot::wire {

// Sets version, hash, fallback and fallback_reason; `fallback` is set exactly for
// Provenance::kNoReplication.
void IdentityToProto(const PlanIdentity& identity, taot::v1::Plan& out);
// A daemon round's plan, or its no-replication fallback with the daemon's reason.
PlanIdentity IdentityFromProto(const taot::v1::Plan& message);

void IdentityToProto(const PlanIdentity& identity, taot::v1::Prefetch& out);  // version, hash
PlanIdentity IdentityFromProto(const taot::v1::Prefetch& message);            // kPushedReplicas

}  // namespace taot::wire

#include "taot/wire/identity_wire.h"

namespace taot::wire {

void IdentityToProto(const PlanIdentity& identity, taot::v1::Plan& out) {
  out.set_version(identity.version);
  out.set_hash(identity.hash);
  out.set_fallback(identity.fallback());
  out.set_fallback_reason(identity.reason);
}

PlanIdentity IdentityFromProto(const taot::v1::Plan& message) {
  return {message.version(), message.hash(), message.fallback() ? Provenance::kNoReplication : Provenance::kDaemonRound,
          message.fallback_reason()};
}

void IdentityToProto(const PlanIdentity& identity, taot::v1::Prefetch& out) {
  out.set_version(identity.version);
  out.set_hash(identity.hash);
}

PlanIdentity IdentityFromProto(const taot::v1::Prefetch& message) {
  return {message.version(), message.hash(), Provenance::kPushedReplicas, ""};
}

}  // namespace taot::wire

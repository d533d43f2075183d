// A plan's content on the wire: replicas and assignments to and from taot.v1. Decoding checks
// every field a receiver indexes with, and that the content is what the message's hash says.
#pragma once

#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "taot/planner/plan.h"
#include "taot/v1/planner.pb.h"

namespace taot::wire {

using ReplicasProto = google::protobuf::RepeatedPtrField<taot::v1::Replica>;

void ReplicasToProto(std::span<const Replica> replicas, ReplicasProto& out);
// Errors name the element and field: "replicas[3].rank: must be >= 0, got -1".
absl::StatusOr<std::vector<Replica>> ReplicasFromProto(const ReplicasProto& replicas);

// Sets the message's replicas and assignments (nothing else).
void PlanToProto(const Plan& plan, taot::v1::Plan& out);
// The replicas and assignments, as sent (canonical when the sender's was). Besides the fields'
// ranges, the content must hash to the message's `hash` (DATA_LOSS otherwise): a status listing's
// plans, sent without their lists, do not decode.
absl::StatusOr<Plan> PlanFromProto(const taot::v1::Plan& message);

}  // namespace taot::wire

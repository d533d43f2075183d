// The scorecard (taot/planner/scorecard.h) as taot.v1.PlanStats, every field of it.
#pragma once

#include "absl/status/statusor.h"
#include "taot/planner/scorecard.h"
#include "taot/v1/planner.pb.h"

namespace taot::wire {

void ScorecardToProto(const Scorecard& score, taot::v1::PlanStats& out);
// Counts must be >= 0 and figures finite; errors name the field ("stats.tokens_local: ...").
absl::StatusOr<Scorecard> ScorecardFromProto(const taot::v1::PlanStats& stats);

}  // namespace taot::wire

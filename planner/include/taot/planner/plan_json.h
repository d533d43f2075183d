// The PLAN file: a plan, its planner and its scorecard as JSON (docs/formats.md).
//
//   {"planner": NAME, "replicas": [{"expert": e, "rank": r}],
//    "assignments": [{"source": s, "expert": e, "rank": r, "tokens": n}],
//    "stats": {"imbalance_before_pct": x, "imbalance_after_pct": x, "intra_node_transfers": n,
//              "inter_node_transfers": n, "weighted_cost": x, "target_met": b,
//              "plan_time_us": x, ...}}
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "taot/planner/plan.h"
#include "taot/planner/scorecard.h"

namespace taot {

// The "stats" object alone, on one line.
std::string ScorecardToJson(const Scorecard& score);

std::string PlanToJson(std::string_view planner, const Plan& plan, const Scorecard& score);

// Reads the replicas and assignments of a PLAN (stats, if present, are ignored: the caller
// rescores). Errors name the entry, e.g. "assignments[3].tokens: must be an integer".
absl::StatusOr<Plan> ParsePlan(std::string_view json);

}  // namespace taot

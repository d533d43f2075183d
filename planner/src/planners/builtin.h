// Factories of the built-in planners; the list that registers them is builtin_list.h.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "taot/planner/planner.h"
#include "taot/planner/planner_params.h"

namespace taot::planners {

using PlannerOr = absl::StatusOr<std::unique_ptr<Planner>>;

PlannerOr MakeNone(const PlannerParams& params);
PlannerOr MakeEcho(const PlannerParams& params);
PlannerOr MakeLlep(const PlannerParams& params);
PlannerOr MakeEplb(const PlannerParams& params);
PlannerOr MakeEplbFixedHome(const PlannerParams& params);
PlannerOr MakeLplb(const PlannerParams& params);
PlannerOr MakeTaotPaper(const PlannerParams& params);
PlannerOr MakeTaot(const PlannerParams& params);
PlannerOr MakeTaotBlock(const PlannerParams& params);

}  // namespace taot::planners

// The built-in planners in their fixed order ("taot" first, then the peers, then "none"), each
// with its summary and parameters' help: what PlannerRegistry::BuiltIn() holds.
#pragma once

#include "taot/planner/registry.h"

namespace taot::planners {

void AddBuiltInPlanners(PlannerRegistry& registry);

}  // namespace taot::planners

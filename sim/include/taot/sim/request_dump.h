// Writes the requests a simulated run planned on its critical path, one CASE file each, so that
// exactly what the simulator timed can be planned again, profiled or compared between builds
// (`taot plan -i FILE`, `plan_repeat FILE,FILE,...`; docs/performance.md).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "taot/sim/simulator.h"

namespace taot::sim {

// Creates `directory` (and its parents) and refuses one that already holds anything, before
// anything is written: a dump never mixes with, or overwrites, an earlier one.
absl::Status PrepareRequestDirectory(const std::string& directory);

// "step_001_layer_007_mb_03.json": sorted by name, the files come in the order the run planned
// them (within these widths).
std::string RequestFileName(const PlanPoint& point);

// An observer for Simulate that writes each request to directory/RequestFileName(point), a CASE
// whose meta names the planner and the point. Errors name the file.
RequestObserver WriteRequestsTo(std::string directory, std::string planner);

}  // namespace taot::sim

// taot-block planning on a CUDA device, as a registry planner: the layers of a batch (a
// microbatch's rounds, Planner::MakePlans) are planned in one launch of PlanLayersCuda, one
// block per layer, and each plan is the CPU build's bit for bit (the same source,
// block_planner.h). The daemon's --device cuda:N puts it in the place of the CPU taot-block.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "taot/planner/planner.h"
#include "taot/planner/planner_params.h"
#include "taot/planner/registry.h"

namespace taot::kernels {

// taot-block on CUDA device `device`, with taot-block's parameters. FailedPrecondition naming
// the device when there is no such device (or no driver); InvalidArgument for a bad parameter.
absl::StatusOr<std::unique_ptr<Planner>> MakeDeviceBlockPlanner(int device, const PlannerParams& params);

// Has `registry` make taot-block on `device` (PlannerRegistry::Rebind), after checking that the
// device can be used: an error here names it, so that a daemon fails at its start, not at a plan.
absl::Status PlanBlocksOnDevice(PlannerRegistry& registry, int device);

}  // namespace taot::kernels

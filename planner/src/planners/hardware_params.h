// The cluster and model a planner models, read from its parameters: `cluster` and `model`
// name presets (cluster_spec.h, model_spec.h) and each field of taot/planner/hardware_fields.h
// overrides the preset by its name (e.g. nvlink_gbps=300, hidden=4096), so a scenario reaches
// the planner through the same key=value strings as every other parameter.
#pragma once

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "planners/params.h"
#include "taot/planner/cluster_spec.h"
#include "taot/planner/model_spec.h"

namespace taot::planners {

struct Hardware {
  ClusterSpec cluster;
  ModelSpec model;
  // Microbatches per optimizer step (gradient accumulation): how many times a replica placed
  // now serves before the weights change.
  int microbatches = 1;
};

// Defaults: cluster h800, model qwen3-30b-a3b. Errors name the key.
absl::StatusOr<Hardware> ReadHardware(ParamReader& reader);

// The first of `params`' keys that ReadHardware reads (cluster, model, microbatches, a hardware
// field), if any: for the error that says such a key needs the hardware model switched on.
std::optional<std::string> FirstHardwareKey(const PlannerParams& params);

}  // namespace taot::planners

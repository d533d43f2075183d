// The cluster and model fields a planner parameter may set by name (nvlink_gbps=300,
// hidden=4096), in one table: the `taot` planner reads its overrides through it, `taot planners`
// lists them from it, and the simulator writes a scenario's hardware into parameters with it,
// so a field added here reaches all three. A field's default is its preset's value
// (ClusterPreset, ModelPreset).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "taot/planner/cluster_spec.h"
#include "taot/planner/model_spec.h"
#include "taot/planner/planner_params.h"

namespace taot {

struct HardwareField {
  std::string_view key;  // the parameter's name, which is also the member's
  std::variant<double ClusterSpec::*, int ClusterSpec::*, int ModelSpec::*> member;
  // What a parameter may set it to.
  double min = 0;
  double max = 0;
};

enum class HardwareSide { kCluster, kModel };
HardwareSide SideOf(const HardwareField& field);

// The cluster's fields, then the model's, in the order the planner reads them.
std::span<const HardwareField> HardwareFields();

// The value `field` names in `cluster` or `model`, for a reader that sets it.
std::variant<double*, int*> FieldIn(const HardwareField& field, ClusterSpec& cluster, ModelSpec& model);

// One side's keys, comma separated ("hidden, expert_ffn, top_k, dtype_bytes"), for help text.
std::string HardwareFieldKeys(HardwareSide side);

// Every field of `cluster` and `model` as key=value; numbers are written so that they read back
// bit for bit (%.17g).
PlannerParams HardwareFieldParams(const ClusterSpec& cluster, const ModelSpec& model);

}  // namespace taot

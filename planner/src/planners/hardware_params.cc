#include "planners/hardware_params.h"

#include <cstdint>
#include <string>
#include <variant>

#include "absl/strings/str_cat.h"
#include "taot/planner/hardware_fields.h"

namespace taot::planners {
namespace {

// Reads one field's override into `hw`, keeping the preset's value when the key is absent.
void ReadField(ParamReader& reader, const HardwareField& f, Hardware& hw) {
  const std::string key(f.key);
  const std::variant<double*, int*> value = FieldIn(f, hw.cluster, hw.model);
  if (double* const* d = std::get_if<double*>(&value)) {
    **d = reader.Double(key, **d, f.min, f.max);
  } else {
    int& i = *std::get<int*>(value);
    i = static_cast<int>(reader.Int(key, i, static_cast<int64_t>(f.min), static_cast<int64_t>(f.max)));
  }
}

}  // namespace

absl::StatusOr<Hardware> ReadHardware(ParamReader& reader) {
  Hardware hw;
  absl::StatusOr<ClusterSpec> cluster = ClusterPreset(reader.String("cluster", "h800"));
  if (!cluster.ok()) return absl::InvalidArgumentError(absl::StrCat("planner parameter ", cluster.status().message()));
  absl::StatusOr<ModelSpec> model = ModelPreset(reader.String("model", "qwen3-30b-a3b"));
  if (!model.ok()) return absl::InvalidArgumentError(absl::StrCat("planner parameter ", model.status().message()));
  hw.cluster = *cluster;
  hw.model = *model;
  for (const HardwareField& f : HardwareFields()) ReadField(reader, f, hw);
  hw.microbatches = static_cast<int>(reader.Int("microbatches", 1, 1, 1 << 20));
  return hw;
}

std::optional<std::string> FirstHardwareKey(const PlannerParams& params) {
  for (const auto& [key, value] : params) {
    if (key == "cluster" || key == "model" || key == "microbatches") return key;
    for (const HardwareField& f : HardwareFields()) {
      if (key == f.key) return key;
    }
  }
  return std::nullopt;
}

}  // namespace taot::planners

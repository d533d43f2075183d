#include "planners/hardware_params.h"

#include <cstdint>

#include "absl/strings/str_cat.h"

namespace taot::planners {

absl::StatusOr<Hardware> ReadHardware(ParamReader& reader) {
  Hardware hw;
  absl::StatusOr<ClusterSpec> cluster = ClusterPreset(reader.String("cluster", "h800"));
  if (!cluster.ok()) return absl::InvalidArgumentError(absl::StrCat("planner parameter ", cluster.status().message()));
  absl::StatusOr<ModelSpec> model = ModelPreset(reader.String("model", "qwen3-30b-a3b"));
  if (!model.ok()) return absl::InvalidArgumentError(absl::StrCat("planner parameter ", model.status().message()));
  hw.cluster = *cluster;
  hw.model = *model;
  ClusterSpec& c = hw.cluster;
  constexpr double kBig = 1e9;
  for (auto [key, field] : {std::pair{"gemm_tflops", &c.gemm_tflops},
                            {"hbm_gbps", &c.hbm_gbps},
                            {"nvlink_gbps", &c.nvlink_gbps},
                            {"ib_gbps", &c.ib_gbps}}) {
    *field = reader.Double(key, *field, 1e-9, kBig);
  }
  for (auto [key, field] : {std::pair{"nvlink_latency_us", &c.nvlink_latency_us},
                            {"ib_latency_us", &c.ib_latency_us},
                            {"gemm_launch_us", &c.gemm_launch_us}}) {
    *field = reader.Double(key, *field, 0, kBig);
  }
  c.nics_per_gpu = static_cast<int>(reader.Int("nics_per_gpu", c.nics_per_gpu, 1, 64));
  ModelSpec& m = hw.model;
  for (auto [key, field] : {std::pair{"hidden", &m.hidden}, {"expert_ffn", &m.expert_ffn},
                            {"top_k", &m.top_k}, {"dtype_bytes", &m.dtype_bytes}}) {
    *field = static_cast<int>(reader.Int(key, *field, 1, int64_t{1} << 20));
  }
  hw.microbatches = static_cast<int>(reader.Int("microbatches", 1, 1, 1 << 20));
  return hw;
}

}  // namespace taot::planners

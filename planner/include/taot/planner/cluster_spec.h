// The hardware the step-time model runs on (docs/model.md gives every default and its source).
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace taot {

// Achieved (not peak) figures, per GPU. Those a planner parameter may override are listed once
// in taot/planner/hardware_fields.h.
struct ClusterSpec {
  int gpus_per_node = 8;
  // Dense bf16 GEMM throughput an expert FFN achieves, TFLOP/s (H100/H800: 600-700).
  double gemm_tflops = 650;
  // HBM bandwidth, GB/s (H100 SXM: 3350 peak; ~2800 achieved). Bounds tiny GEMMs.
  double hbm_gbps = 2800;
  // NVLink bandwidth per GPU, GB/s, and the latency of one transfer, us (H800: ~150 GB/s per
  // direction achieved; H100 NVLink 4: up to ~370).
  double nvlink_gbps = 160;
  double nvlink_latency_us = 3;
  // InfiniBand per NIC, GB/s (NDR 400 Gb/s: ~43-47 achieved), NICs per GPU, latency, us.
  double ib_gbps = 45;
  int nics_per_gpu = 1;
  double ib_latency_us = 8;
  // Fixed cost of launching one expert GEMM (a kernel launch and its tail), us.
  double gemm_launch_us = 6;

  double ib_gbps_per_gpu() const { return ib_gbps * nics_per_gpu; }
};

// The defaults above, named: "h800" (NVLink ~160 GB/s, one 400G NIC per GPU) and "h100"
// (NVLink 4 ~360 GB/s achieved).
absl::StatusOr<ClusterSpec> ClusterPreset(const std::string& name);

// Checks every field (positive, finite); the error names the field.
absl::Status ValidateCluster(const ClusterSpec& cluster);

}  // namespace taot

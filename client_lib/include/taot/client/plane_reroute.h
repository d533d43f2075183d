// Every pair's destination and virtual expert id under a layer's tables, where the pairs are
// (kernels/reroute.h's Reroute on the transport's plane): on NCCL it runs on taot's side stream
// after the work already on the trainer's stream, which then waits for it, so a stock
// dispatcher reads the outputs with no host copy; on a host transport it is done when it returns.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "taot/client/layer_tables.h"
#include "taot/client/transport.h"
#include "taot/kernels/reroute.h"

namespace taot::client {

// The reroute's outputs, in the plane's memory, sized for the pairs (virtual_expert, dest_rank,
// order: one per pair; send_counts: one per rank; check: one).
struct RerouteOutputs {
  int32_t* virtual_expert = nullptr;
  int32_t* dest_rank = nullptr;
  int64_t* send_counts = nullptr;
  int64_t* order = nullptr;
  kernels::RouteCheck* check = nullptr;
};

// The reroute's scratch in the plane's memory: grown to the largest layer seen, then reused. A
// trainer that captures the reroute in a CUDA graph reserves it first for its largest layer
// (ReserveRerouteWorkspace), so that no launch allocates or waits on the host.
class RerouteWorkspace {
 public:
  explicit RerouteWorkspace(absl::Duration wait = absl::Seconds(60)) : wait_(wait) {}
  int64_t grows() const { return grows_; }
  void* data() const { return buffer_ == nullptr ? nullptr : buffer_->data(); }
  size_t bytes() const { return bytes_; }
  // At least `bytes` of `plane`'s memory; growing first waits for the plane's work (it may still
  // read the old memory), at most the wait given at construction.
  absl::Status GrowTo(DataPlane& plane, size_t bytes);

 private:
  const absl::Duration wait_;
  std::unique_ptr<TransportBuffer> buffer_;
  size_t bytes_ = 0;
  int64_t grows_ = 0;
};

// Reroutes `pairs` expert ids (int32, plane memory) under the plan loaded in `tables`. Refused
// before anything runs: tables not loaded on this transport, a null output, pairs < 0. The
// kernel's own verdict on the ids (an id outside [0, E), a plan made from other counts) is in
// outputs.check, read like the outputs.
absl::Status StartReroute(Transport& transport, const LayerTables& tables, const int32_t* expert_ids, int64_t pairs,
                          const RerouteOutputs& outputs, RerouteWorkspace& workspace,
                          std::optional<uintptr_t> trainer_stream = std::nullopt);

// Grows `workspace` now for layers of up to `max_pairs` pairs with E = `experts` and K = `slots`
// (the workspace depends on R, E, K and the pairs, not on the plan). Refused by field name:
// experts not a positive multiple of R, slots or max_pairs negative.
absl::Status ReserveRerouteWorkspace(Transport& transport, int experts, int slots, int64_t max_pairs,
                                     RerouteWorkspace& workspace);

}  // namespace taot::client

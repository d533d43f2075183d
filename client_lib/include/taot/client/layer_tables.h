// Everything a rank's data plane reads for one layer under a plan, built on the host once per
// plan (in pinned staging on a device) and copied to the transport's memory with one upload: the reroute tables
// (kernels/route_table.h), the list of home experts this rank sends and the list of slots it
// fills (replica_moves.h numbers them). The tensor exchanges (tensor_exchange.h) and the reroute
// on the plane (plane_reroute.h) read them there.
//
// Kept between layers: every plan of a shape (R, E, K) is laid out as the fullest plan of that
// shape is, so later plans allocate nothing, the upload has one size and the kernels read fixed
// addresses (the staging's and the plane's). Loading the next plan is ordered after the work
// already enqueued on the plane (a stream on NCCL), so a layer's moves may still be in flight when
// the next layer's tables load.
//
// Load is Stage then Upload. Apart, they let a CUDA graph hold the upload: capture Upload (with
// the kernels that read the tables) once, then before each replay Stage the replay's plan; the
// replay copies what the staging holds then. Stage writes the staging on the host, so the trainer
// must not stage while a replay that copies from it may still run (synchronize the graph's stream,
// or wait on an event recorded after it, first).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "taot/client/replica_moves.h"
#include "taot/client/transport.h"
#include "taot/kernels/route_table.h"
#include "taot/planner/plan.h"

namespace taot::client {

class LayerTables {
 public:
  // Growing frees memory earlier work may still read: it first waits for the plane, at most `wait`.
  explicit LayerTables(absl::Duration wait = absl::Seconds(60)) : wait_(wait) {}

  // Builds this rank's tables under `plan` (E = experts, K = slots per rank) and uploads them to
  // `transport`'s plane. Errors name the field (an assignment without its replica, more replicas
  // on a rank than K, a shape that is not E = R x E/R) and change nothing, unless the upload
  // itself fails after the memory grew (then no plan is loaded).
  absl::Status Load(Transport& transport, const Plan& plan, int experts, int slots);

  // Load's first half: builds the tables into the staging (first waiting, at most the wait given
  // at construction, for the last upload enqueued outside a capture to have read it) and makes
  // the accessors below describe `plan`; enqueues nothing. The same errors as Load.
  absl::Status Stage(Transport& transport, const Plan& plan, int experts, int slots);
  // Load's second half: enqueues the copy of the staged tables into the plane's memory. It neither
  // waits on the host nor allocates, so a CUDA graph can capture it. With `trainer_stream`, the
  // copy runs after the work already on it and the stream then waits for the copy (how a capture
  // of the trainer's stream takes in the side stream's copy). FAILED_PRECONDITION before a Stage.
  absl::Status Upload(std::optional<uintptr_t> trainer_stream = std::nullopt);

  // The loaded plan's shape and this rank's share of it (host memory).
  int rank() const { return rank_; }
  int ranks() const { return ranks_; }
  int experts() const { return experts_; }
  int slots() const { return slots_; }
  const std::vector<ReplicaTransfer>& transfers() const { return transfers_; }
  // Local indices (expert - rank x E/R) of the distinct home experts this rank sends, by expert;
  // and the slot of every replica it receives, in transfer order.
  const std::vector<int32_t>& sent() const { return sent_; }
  const std::vector<int32_t>& received() const { return received_; }
  // Whether a plan is loaded or staged (an error after the memory grew leaves none).
  bool loaded() const { return loaded_; }

  // The same in the plane's memory.
  kernels::RouteTable route() const { return route_; }
  const int32_t* sent_on_plane() const { return sent_on_plane_; }
  const int32_t* received_on_plane() const { return received_on_plane_; }

  // The transport whose plane holds the tables (null before the first Load).
  const Transport* transport() const { return transport_; }

 private:
  // The staging and the plane's copy, both `bytes` long (growing first waits for the plane).
  absl::Status Reserve(DataPlane& plane, size_t bytes);

  const absl::Duration wait_;
  Transport* transport_ = nullptr;
  std::unique_ptr<StagingBuffer> staging_;
  std::unique_ptr<TransportBuffer> buffer_;
  size_t buffer_bytes_ = 0;
  size_t staged_bytes_ = 0;
  bool loaded_ = false;
  int rank_ = 0, ranks_ = 0, experts_ = 0, slots_ = 0;
  std::vector<ReplicaTransfer> transfers_;
  std::vector<int32_t> sent_, received_;
  kernels::RouteTable route_;
  const int32_t* sent_on_plane_ = nullptr;
  const int32_t* received_on_plane_ = nullptr;
};

}  // namespace taot::client

// Where a transport's buffers live and where the data-plane kernels (kernels/) run on them, in
// order with the transport's exchanges: host memory and the CPU references for Gloo and the
// in-process transport; device memory and the CUDA launchers on the side stream for NCCL.
//
// The exchanges of replica_exchange.h are written once against this interface. On an ordered
// plane (a CUDA stream) they enqueue everything at once and the host never waits inside a layer;
// on a host plane the steps after an exchange run when the exchange is waited for. Either way
// the same kernels see the same bytes in the same order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "taot/kernels/accumulate.h"
#include "taot/kernels/expert_weights.h"
#include "taot/kernels/reroute.h"
#include "taot/kernels/words.h"

namespace taot::client {

// Memory of the plane's kind, owned by whoever holds it.
class TransportBuffer {
 public:
  virtual ~TransportBuffer() = default;
  virtual void* data() = 0;
};

// Host memory a plane copies from (DataPlane::CopyIn), at a fixed address: pinned on a device, so
// that a copy from it is asynchronous and a CUDA graph can capture one (a replay copies what the
// buffer holds at that time). Made by, and only used with, one plane.
class StagingBuffer {
 public:
  virtual ~StagingBuffer() = default;
  virtual void* data() = 0;
};

class DataPlane {
 public:
  virtual ~DataPlane() = default;

  // True when work enqueued here runs after the exchanges started before it, with no host wait
  // (a CUDA stream); false when an exchange has to be waited for before the next step (host).
  virtual bool ordered() const = 0;

  // A buffer of `bytes` in the plane's memory.
  virtual absl::StatusOr<std::unique_ptr<TransportBuffer>> NewBuffer(size_t bytes) = 0;

  // A staging buffer of `bytes`.
  virtual absl::StatusOr<std::unique_ptr<StagingBuffer>> NewStaging(size_t bytes) = 0;
  // Waits, at most `timeout`, until the copies out of `staging` enqueued outside a CUDA graph
  // capture have read it: the host may then write it again. (A captured copy's replays are the
  // trainer's to wait for.)
  virtual absl::Status AwaitStaging(StagingBuffer& staging, absl::Duration timeout) = 0;
  // Copies `bytes` from `staging` into `dst` (the plane's memory), in order with the plane's work:
  // the one host-to-device copy of a layer's tables. It neither waits on the host nor allocates,
  // so a CUDA graph can capture it.
  virtual absl::Status CopyIn(StagingBuffer& staging, size_t bytes, void* dst) = 0;

  // kernels/expert_weights.h and kernels/accumulate.h on the plane; `experts` in plane memory
  // (from Upload).
  virtual absl::Status Pack(const kernels::ExpertTensors& tensors, const int32_t* experts, int32_t count,
                            void* packed) = 0;
  virtual absl::Status Unpack(const kernels::ExpertTensors& tensors, const int32_t* experts, int32_t count,
                              const void* packed) = 0;
  virtual absl::Status AccumulateMany(float* dst, const kernels::GradSources& sources, size_t n) = 0;
  // kernels/reroute.h's histogram of the router's ids (int32, or int64 when `wide`), `counts` and
  // `check` in plane memory.
  virtual absl::Status CountExperts(const void* ids, bool wide, int64_t n, int32_t experts, int64_t* counts,
                                    kernels::RouteCheck* check) = 0;
  // kernels/words.h: dst[0..count) = the words (plane memory), in order with the plane's work.
  // On a device the words travel as a launch's arguments: not a host copy.
  virtual absl::Status WriteWords(int64_t* dst, const kernels::Words& words) = 0;
  // Copies plane memory to `dst` (host memory): valid once Finish returns OK. The one
  // device-to-host copy of a layer's counts (pinned and asynchronous on a device).
  virtual absl::Status Download(const int64_t* src, std::span<int64_t> dst) = 0;

  // Host-device copies so far (CopyIn and Download calls that copied anything), for the checks
  // that a layer makes exactly one each way.
  struct Copies {
    int64_t uploads = 0;
    int64_t downloads = 0;
  };
  virtual Copies copies() const = 0;

  // kernels/reroute.h's Reroute on the plane: its workspace's size, and the launch (every
  // pointer and the table's arrays in plane memory).
  virtual size_t RerouteWorkspaceBytes(int64_t n, const kernels::RouteTable& table) const = 0;
  virtual absl::Status Reroute(const int32_t* expert_ids, int64_t n, const kernels::RouteTable& table,
                               int32_t* virtual_expert, int32_t* dest_rank, int64_t* send_counts, int64_t* order,
                               void* workspace, size_t workspace_bytes, kernels::RouteCheck* check) = 0;

  // The trainer's `stream` (a cudaStream_t as an integer) waits for all the work enqueued here so
  // far: the guest GEMM after the weights arrive, the optimizer after the gradients are added.
  // A host plane's work is done when enqueued: nothing to wait for.
  virtual absl::Status HoldStream(uintptr_t stream) = 0;
  // Work enqueued here from now on waits for the work already on the trainer's `stream` (the
  // backward pass that wrote the slots' gradients).
  virtual absl::Status AwaitStream(uintptr_t stream) = 0;

  // The host waits for all the work enqueued here, for at most `timeout`.
  virtual absl::Status Finish(absl::Duration timeout) = 0;
};

}  // namespace taot::client

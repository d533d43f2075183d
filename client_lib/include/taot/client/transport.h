// How ranks talk to each other for taot: the all-gather of load rows and plan fingerprints, and
// the point-to-point moves of replica weights and guest gradients. Two implementations: Gloo
// (TCP, CPU memory; for CPU training and the tests) and NCCL (GPU memory, a side CUDA stream).
// A transport is used by one thread at a time; every wait has a deadline, and a peer that does
// not answer in time is an error (DEADLINE_EXCEEDED or UNAVAILABLE), never a hang.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "taot/client/data_plane.h"

namespace taot::client {

// One message of an exchange. `tag` tells apart several messages between the same two ranks in
// one exchange (both sides use the same tag for the same message).
struct SendOp {
  int peer = 0;
  const void* data = nullptr;
  size_t bytes = 0;
  uint32_t tag = 0;
};
struct RecvOp {
  int peer = 0;
  void* data = nullptr;
  size_t bytes = 0;
  uint32_t tag = 0;
};

// Sends and receives started together; the buffers must stay valid until Wait returns OK.
class PendingExchange {
 public:
  virtual ~PendingExchange() = default;
  // Completes every send and receive, or fails when `timeout` passes first.
  virtual absl::Status Wait(absl::Duration timeout) = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank's `mine` (the same length on all), in rank order: all.size() == size() * mine.size().
  virtual absl::Status AllGather(std::span<const int64_t> mine, std::span<int64_t> all, absl::Duration timeout) = 0;
  // The same over the plane's memory and in its order (n entries each): on NCCL enqueued on the
  // side stream (done once the plane's Finish returns OK), on host transports done when it returns.
  virtual absl::Status AllGatherOnPlane(const int64_t* mine, int64_t* all, size_t n, absl::Duration timeout) = 0;
  // Starts the sends and receives (a rank may both send to and receive from a peer).
  virtual absl::StatusOr<std::unique_ptr<PendingExchange>> StartExchange(std::vector<SendOp> sends,
                                                                         std::vector<RecvOp> recvs) = 0;
  // The transport's memory and the kernels that run there, in order with its exchanges.
  virtual DataPlane& plane() = 0;
};

}  // namespace taot::client

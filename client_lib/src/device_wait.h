// How taot's device code waits: CUDA results as status, and the interface a device plane waits
// through (cuda_plane.h), so that the plane serves both the NCCL transport (whose waits also watch
// the communicator, nccl_wait.h) and the in-process device transport (events only). Internal to
// libtaot_client's device part.
#pragma once

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace taot::client {

absl::Status Cuda(cudaError_t e, const char* what);

// What a device plane's transport lets it do: whether it may still be used, and a wait for an
// event with a deadline (never a hang: a wait that runs out is DEADLINE_EXCEEDED).
class DeviceWaiter {
 public:
  virtual ~DeviceWaiter() = default;
  virtual absl::Status Usable(const char* what) const = 0;
  // Waits until `event` (not null) has completed, or until `deadline`.
  virtual absl::Status Await(cudaEvent_t event, absl::Time deadline, const char* what) = 0;
};

// Polls `event` until it completes or `deadline` passes (DEADLINE_EXCEEDED).
absl::Status AwaitEvent(cudaEvent_t event, absl::Time deadline, const char* what);

}  // namespace taot::client

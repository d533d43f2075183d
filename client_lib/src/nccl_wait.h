// Status from NCCL results, and the one way the NCCL transport waits: polling with a deadline,
// aborting the communicator when it passes. Internal to libtaot_client's NCCL part.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "device_wait.h"

namespace taot::client {

absl::Status Nccl(ncclResult_t r, const char* what);

// taot's communicator. Once aborted (a wait ran out of time) it is gone: every later use is
// FAILED_PRECONDITION, and it is not destroyed again. A device plane waits through it, so that a
// peer's failure ends the plane's waits too.
struct NcclComm final : DeviceWaiter {
  ncclComm_t comm = nullptr;
  bool aborted = false;
  ~NcclComm() override;
  absl::Status Usable(const char* what) const override;
  absl::Status Await(cudaEvent_t event, absl::Time deadline, const char* what) override;
};

// Waits until the communicator has no pending work (non-blocking mode) and `event`, when not
// null, has completed, or until `deadline`, when it aborts the communicator: a peer that never
// answers is DEADLINE_EXCEEDED, not a hang.
absl::Status AwaitComm(NcclComm& comm, cudaEvent_t event, absl::Time deadline, const char* what);

}  // namespace taot::client

// Ranks that are threads of one process sharing one CUDA device: the device data plane (the CUDA
// kernels on a side stream per rank, buffers in device memory, the same plane the NCCL transport
// has) over the in-process transport's rendezvous. NCCL takes one rank per device, so this is
// how one GPU runs the device path of many ranks: the transport contract, the end-to-end layer
// (label `gpu`). Built with the NCCL transport (TAOT_WITH_NCCL).
//
// Unlike NCCL's, its exchanges are not stream-ordered on the wire: StartExchange waits for the
// rank's stream, stages the sends through host memory, and returns once every receive has
// arrived and its copy to the device is enqueued (at most `timeout` later: a peer that never
// sends is DEADLINE_EXCEEDED). So a rank's exchanges must be started in the same order on every
// rank, as they are over NCCL. Its staging copies are the wire's, not the plane's: the plane's
// copy counters (DataPlane::copies) count what they count over NCCL.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "taot/client/transport.h"

namespace taot::client {

struct InProcessDeviceOptions {
  int device = 0;  // the CUDA device every rank runs on
  // An exchange's wait for its peers, and the plane's waits for the device.
  absl::Duration timeout = absl::Seconds(60);
};

// `size` connected transports, one per rank (index = rank); each is used by its rank's thread.
// Refused by field: size < 1, a device that is not there.
absl::StatusOr<std::vector<std::unique_ptr<Transport>>> ConnectInProcessOnDevice(int size,
                                                                                 const InProcessDeviceOptions& options);

}  // namespace taot::client

// The NCCL transport: buffers in GPU memory, a communicator of taot's own (never the trainer's)
// and a side CUDA stream, so replica moves overlap the trainer's work (docs/design.md, "Conventions"; DeepEP builds
// its communicator the same way, from a unique id the ranks share). Built when CUDA and NCCL are
// found (TAOT_WITH_NCCL). Every wait polls with a deadline; a peer that does not answer in time
// aborts the communicator (NCCL's non-blocking mode) and the call fails with DEADLINE_EXCEEDED,
// never hangs.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "taot/client/transport.h"

namespace taot::client {

// ncclUniqueId's bytes: rank 0 makes one, the trainer hands it to every rank (for example with a
// broadcast in its own process group).
using NcclUniqueId = std::array<char, 128>;
absl::StatusOr<NcclUniqueId> NewNcclUniqueId();

struct NcclOptions {
  int rank = 0;
  int size = 1;
  int device = 0;  // the CUDA device of this rank
  NcclUniqueId id{};
  // The side stream (a cudaStream_t as an integer); 0: the transport makes a non-blocking one.
  uintptr_t stream = 0;
  // The rendezvous, and the one host wait a layer may make (for the previous layer's table
  // upload, normally long done).
  absl::Duration timeout = absl::Seconds(60);
};

absl::StatusOr<std::unique_ptr<Transport>> ConnectNccl(const NcclOptions& options);

}  // namespace taot::client

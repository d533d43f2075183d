// Moving replica weights to their guests before a layer, and guest gradients back after it,
// over a Transport (replica_moves.h says which and where).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "taot/client/transport.h"
#include "taot/planner/plan.h"

namespace taot::client {

// One rank's experts as buffers of `bytes` each: its home experts by local index
// (expert - rank * E / R) and its guest slots. Weights or gradients; CPU or device memory, as the
// transport takes.
struct ExpertBuffers {
  size_t bytes = 0;
  std::vector<void*> home;
  std::vector<void*> slots;
};

struct MovedBytes {
  int64_t sent = 0;
  int64_t received = 0;
};

// Starts the plan's weight moves for this rank: each of its home experts the plan replicates
// goes to every guest holding it, and every replica it hosts arrives in its slot. Wait on the
// result before computing with the slots (or before changing the home weights).
absl::StatusOr<std::unique_ptr<PendingExchange>> StartWeightMoves(Transport& transport, const Plan& plan, int experts,
                                                                  const ExpertBuffers& weights,
                                                                  MovedBytes* moved = nullptr);

// After the backward pass: every guest sends its slots' gradients home, and each home adds the
// ones it receives to its own, in ascending guest order (float32 gradients, bytes / 4 each).
absl::Status ReturnGradients(Transport& transport, const Plan& plan, int experts, const ExpertBuffers& gradients,
                             absl::Duration timeout, MovedBytes* moved = nullptr);

}  // namespace taot::client

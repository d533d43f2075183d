// Replica weights and guest gradients moved as parameter tensors (kernels/expert_weights.h), in
// stream order where the transport runs on a device.
//
// replica_exchange.h moves one contiguous buffer per expert, zero-copy. This is the form for
// what trainers really hold: an expert is a part of one or more parameter tensors (weights,
// biases, fp8 scales), contiguous per expert or strided ([rows, experts, cols]). What a rank
// sends is packed into a workspace first, one packed expert per distinct sent expert, and what it
// receives is unpacked into its slots after the exchange; gradients come home packed and are
// added in ascending guest order, fp32 or bf16 into fp32 (Megatron's main_grad).
//
// Both read the layer's LayerTables (layer_tables.h), loaded once per plan. On the NCCL transport
// every step (pack, the grouped sends and receives, unpack or the adds) is enqueued on taot's side stream and the call
// returns at once; with a trainer stream given, the side stream first waits for the trainer's work so far and the
// trainer's stream then waits for the moves (an event), so no host thread waits inside the layer.
// On a host transport (Gloo, in-process) the steps after the exchange run in Wait. Either way the
// kernels see the same bytes in the same order.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "taot/client/layer_tables.h"
#include "taot/client/replica_exchange.h"
#include "taot/client/transport.h"
#include "taot/kernels/accumulate.h"
#include "taot/kernels/expert_weights.h"

namespace taot::client {

// A rank's weights: its home experts (expert index = local index, expert - rank * E / R) and its
// guest slots (expert index = slot, replica_moves.h; as many as the tables' K). The two sides have
// the same tensors in the same order and the same bytes per expert in each (their chunking may
// differ: the packed form is each expert's bytes in chunk order).
struct ExpertLayout {
  kernels::ExpertTensors home;
  kernels::ExpertTensors slots;
};

// A rank's gradients: its slots' gradients (`slot_type`) go home, where they are added into the
// home experts' float32 gradients. Tensor k of `home` holds as many float32 values per expert as
// tensor k of `slots` holds values of `slot_type`.
struct GradientLayout {
  kernels::ExpertTensors slots;
  kernels::GradType slot_type = kernels::GradType::kFloat32;
  kernels::ExpertTensors home;
};

// The transport's memory the tensor form stages through: grown to the largest layer seen and then
// reused, so a steady state allocates nothing (and every kernel sees fixed addresses).
class MoveWorkspace {
 public:
  // Growing frees memory earlier work may still use: it first waits for the plane, at most `wait`.
  explicit MoveWorkspace(absl::Duration wait = absl::Seconds(60));
  ~MoveWorkspace();
  MoveWorkspace(const MoveWorkspace&) = delete;
  MoveWorkspace& operator=(const MoveWorkspace&) = delete;

  // Times the workspace had to grow.
  int64_t grows() const { return grows_; }

  struct Regions;  // internal: the regions and their sizes

 private:
  friend class TensorExchange;
  std::unique_ptr<Regions> regions_;
  absl::Duration wait_;
  int64_t grows_ = 0;
};

// Starts this rank's weight moves under the plan loaded in `tables`: every replicated home expert
// is packed once and sent to each of its guests, and every replica this rank hosts is unpacked
// into its slot. Bad input (a layout that does not fit itself, tables loaded on another
// transport) is INVALID_ARGUMENT or FAILED_PRECONDITION, and nothing is sent. Wait on the result
// before the next call on `workspace` over a host transport; over NCCL, Wait checks (with its
// deadline) that the moves finished, and a later call may be enqueued first.
absl::StatusOr<std::unique_ptr<PendingExchange>> StartTensorMoves(
    Transport& transport, const LayerTables& tables, const ExpertLayout& weights, MoveWorkspace& workspace,
    std::optional<uintptr_t> trainer_stream = std::nullopt, MovedBytes* moved = nullptr);

// After the backward pass: every guest sends its slots' gradients home, and every home adds the
// ones it receives into its own, expert by expert in ascending guest order (a fixed order: the
// sums do not depend on which arrived first).
absl::StatusOr<std::unique_ptr<PendingExchange>> StartGradientReturn(
    Transport& transport, const LayerTables& tables, const GradientLayout& gradients, MoveWorkspace& workspace,
    std::optional<uintptr_t> trainer_stream = std::nullopt, MovedBytes* moved = nullptr);

}  // namespace taot::client

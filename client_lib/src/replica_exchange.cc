#include "taot/client/replica_exchange.h"

#include "absl/strings/str_cat.h"
#include "taot/client/replica_moves.h"
#include "taot/kernels/accumulate.h"

namespace taot::client {
namespace {

// The buffers must cover every home expert and every slot the plan gives this rank.
absl::Status CheckBuffers(const Transport& transport, const std::vector<ReplicaTransfer>& transfers, int experts,
                          const ExpertBuffers& buffers) {
  const int R = transport.size();
  if (experts <= 0 || experts % R != 0) {
    return absl::InvalidArgumentError(absl::StrCat("experts: must be a positive multiple of ", R, ", got ", experts));
  }
  if (static_cast<int>(buffers.home.size()) != experts / R) {
    return absl::InvalidArgumentError(
        absl::StrCat("home: must have E / R = ", experts / R, " buffers, got ", buffers.home.size()));
  }
  if (buffers.bytes == 0) return absl::InvalidArgumentError("bytes: must be positive");
  for (const ReplicaTransfer& t : transfers) {
    if (t.guest == transport.rank() && t.slot >= static_cast<int>(buffers.slots.size())) {
      return absl::InvalidArgumentError(absl::StrCat("slots: the plan puts expert ", t.expert, " in slot ", t.slot,
                                                     " of this rank, which has ", buffers.slots.size(), " slots"));
    }
  }
  return absl::OkStatus();
}

int LocalIndex(const Transport& transport, int expert, int experts) {
  return expert - transport.rank() * (experts / transport.size());
}

}  // namespace

absl::StatusOr<std::unique_ptr<PendingExchange>> StartWeightMoves(Transport& transport, const Plan& plan, int experts,
                                                                  const ExpertBuffers& weights, MovedBytes* moved) {
  const std::vector<ReplicaTransfer> transfers = Transfers(plan, experts / std::max(1, transport.size()));
  if (absl::Status s = CheckBuffers(transport, transfers, experts, weights); !s.ok()) return s;
  std::vector<SendOp> sends;
  std::vector<RecvOp> recvs;
  MovedBytes count;
  for (const ReplicaTransfer& t : transfers) {
    const auto tag = static_cast<uint32_t>(t.expert);
    if (t.home == transport.rank()) {
      sends.push_back({t.guest, weights.home[LocalIndex(transport, t.expert, experts)], weights.bytes, tag});
      count.sent += static_cast<int64_t>(weights.bytes);
    } else if (t.guest == transport.rank()) {
      recvs.push_back({t.home, weights.slots[t.slot], weights.bytes, tag});
      count.received += static_cast<int64_t>(weights.bytes);
    }
  }
  absl::StatusOr<std::unique_ptr<PendingExchange>> pending =
      transport.StartExchange(std::move(sends), std::move(recvs));
  if (pending.ok() && moved != nullptr) *moved = count;
  return pending;
}

absl::Status ReturnGradients(Transport& transport, const Plan& plan, int experts, const ExpertBuffers& gradients,
                             absl::Duration timeout, MovedBytes* moved) {
  const std::vector<ReplicaTransfer> transfers = Transfers(plan, experts / std::max(1, transport.size()));
  if (absl::Status s = CheckBuffers(transport, transfers, experts, gradients); !s.ok()) return s;
  if (gradients.bytes % sizeof(float) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("bytes: float32 gradients need a multiple of 4, got ", gradients.bytes));
  }
  const size_t floats = gradients.bytes / sizeof(float);
  std::vector<SendOp> sends;
  std::vector<RecvOp> recvs;
  std::vector<const ReplicaTransfer*> incoming;  // in transfer order: by expert, then guest
  std::vector<std::unique_ptr<TransportBuffer>> received;
  MovedBytes count;
  for (const ReplicaTransfer& t : transfers) {
    const auto tag = static_cast<uint32_t>(t.expert);
    if (t.guest == transport.rank()) {
      sends.push_back({t.home, gradients.slots[t.slot], gradients.bytes, tag});
      count.sent += static_cast<int64_t>(gradients.bytes);
    } else if (t.home == transport.rank()) {
      incoming.push_back(&t);
      absl::StatusOr<std::unique_ptr<TransportBuffer>> buffer = transport.plane().NewBuffer(gradients.bytes);
      if (!buffer.ok()) return buffer.status();
      received.push_back(*std::move(buffer));
      count.received += static_cast<int64_t>(gradients.bytes);
    }
  }
  for (size_t i = 0; i < incoming.size(); ++i) {
    recvs.push_back(
        {incoming[i]->guest, received[i]->data(), gradients.bytes, static_cast<uint32_t>(incoming[i]->expert)});
  }
  absl::StatusOr<std::unique_ptr<PendingExchange>> pending =
      transport.StartExchange(std::move(sends), std::move(recvs));
  if (!pending.ok()) return pending.status();
  if (absl::Status s = (*pending)->Wait(timeout); !s.ok()) return s;
  for (size_t i = 0; i < incoming.size(); ++i) {
    auto* home = static_cast<float*>(gradients.home[LocalIndex(transport, incoming[i]->expert, experts)]);
    kernels::GradSources one;
    one.source[one.count++] = received[i]->data();
    if (absl::Status s = transport.plane().AccumulateMany(home, one, floats); !s.ok()) return s;
  }
  if (absl::Status s = transport.plane().Finish(timeout); !s.ok()) return s;
  if (moved != nullptr) *moved = count;
  return absl::OkStatus();
}

}  // namespace taot::client

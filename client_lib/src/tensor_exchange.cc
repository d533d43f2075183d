#include "taot/client/tensor_exchange.h"

#include <algorithm>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "taot/client/replica_moves.h"

namespace taot::client {

struct MoveWorkspace::Regions {
  DataPlane* plane = nullptr;
  struct Region {
    std::unique_ptr<TransportBuffer> buffer;
    size_t bytes = 0;
    char* data() const { return buffer == nullptr ? nullptr : static_cast<char*>(buffer->data()); }
  };
  Region send, recv;
  // A host plane's exchange from this workspace not yet waited for: its buffers are in use.
  bool in_flight = false;
};

MoveWorkspace::MoveWorkspace(absl::Duration wait) : regions_(std::make_unique<Regions>()), wait_(wait) {}
MoveWorkspace::~MoveWorkspace() = default;

// The workspace's regions, grown on demand; a friend of MoveWorkspace.
class TensorExchange {
 public:
  using Regions = MoveWorkspace::Regions;

  static absl::StatusOr<Regions*> Reserve(MoveWorkspace& w, DataPlane& plane, size_t send, size_t recv) {
    Regions& r = *w.regions_;
    if (r.plane != nullptr && r.plane != &plane) {
      return absl::FailedPreconditionError("workspace: holds another transport's memory; use one per transport");
    }
    if (r.in_flight) {
      return absl::FailedPreconditionError(
          "workspace: the last exchange from it was not waited for (or failed); wait for it first");
    }
    r.plane = &plane;
    const bool grow = send > r.send.bytes || recv > r.recv.bytes;
    if (!grow) return &r;
    if (absl::Status s = plane.Finish(w.wait_); !s.ok()) return s;
    for (auto [region, bytes] : {std::pair{&r.send, send}, {&r.recv, recv}}) {
      if (bytes <= region->bytes) continue;
      region->buffer.reset();
      region->bytes = 0;
      absl::StatusOr<std::unique_ptr<TransportBuffer>> buffer = plane.NewBuffer(bytes);
      if (!buffer.ok()) return buffer.status();
      region->buffer = *std::move(buffer);
      region->bytes = bytes;
    }
    ++w.grows_;
    return &r;
  }
};

namespace {

// An exchange and what follows it: run at once on an ordered plane (enqueued behind the
// exchange), or in Wait on a host plane, after the exchange is done.
class StagedExchange final : public PendingExchange {
 public:
  StagedExchange(DataPlane& plane, std::unique_ptr<PendingExchange> exchange, std::function<absl::Status()> after,
                 bool* in_flight)
      : plane_(plane), exchange_(std::move(exchange)), after_(std::move(after)), in_flight_(in_flight) {}

  absl::Status Wait(absl::Duration timeout) override {
    const absl::Time deadline = absl::Now() + timeout;
    if (absl::Status s = exchange_->Wait(timeout); !s.ok()) return s;
    if (after_) {
      std::function<absl::Status()> after = std::move(after_);
      after_ = nullptr;
      if (absl::Status s = after(); !s.ok()) return s;
    }
    if (absl::Status s = plane_.Finish(std::max(absl::ZeroDuration(), deadline - absl::Now())); !s.ok()) return s;
    *in_flight_ = false;
    return absl::OkStatus();
  }

 private:
  DataPlane& plane_;
  std::unique_ptr<PendingExchange> exchange_;
  std::function<absl::Status()> after_;
  bool* in_flight_;
};

// Far above any expert (a 1T-parameter model's expert is a few GiB), far below int64 overflow
// when multiplied by the experts of a layer.
constexpr int64_t kMaxExpertBytes = int64_t{1} << 40;

absl::Status CheckTensors(const std::string& field, const kernels::ExpertTensors& t) {
  int64_t bytes = 0;
  if (t.count < 1 || t.count > kernels::kMaxTensors) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".count: must be in [1, ", kernels::kMaxTensors, "], got ", t.count));
  }
  for (int32_t k = 0; k < t.count; ++k) {
    const kernels::ExpertTensor& x = t.tensor[k];
    const std::string at = absl::StrCat(field, ".tensor[", k, "]");
    if (x.base == nullptr) return absl::InvalidArgumentError(absl::StrCat(at, ".base: must not be null"));
    if (x.chunks < 1) return absl::InvalidArgumentError(absl::StrCat(at, ".chunks: must be >= 1, got ", x.chunks));
    if (x.chunk_bytes < 1) {
      return absl::InvalidArgumentError(absl::StrCat(at, ".chunk_bytes: must be >= 1, got ", x.chunk_bytes));
    }
    if (x.chunk_bytes > kMaxExpertBytes / x.chunks) {
      return absl::InvalidArgumentError(absl::StrCat(
          at, ": chunks x chunk_bytes must be at most 2^40 bytes per expert, got ", x.chunks, " x ", x.chunk_bytes));
    }
    bytes += x.chunks * x.chunk_bytes;
  }
  if (bytes > kMaxExpertBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": its tensors must hold at most 2^40 bytes per expert together, got ", bytes));
  }
  return absl::OkStatus();
}

int64_t TensorBytes(const kernels::ExpertTensor& t) { return t.chunks * t.chunk_bytes; }

absl::Status CheckTables(const Transport& transport, const LayerTables& tables) {
  if (!tables.loaded()) return absl::FailedPreconditionError("tables: no plan is loaded");
  if (tables.transport() != &transport) {
    return absl::FailedPreconditionError("tables: were loaded on another transport");
  }
  return absl::OkStatus();
}

absl::Status CheckWeights(const ExpertLayout& w) {
  if (absl::Status s = CheckTensors("weights.home", w.home); !s.ok()) return s;
  if (absl::Status s = CheckTensors("weights.slots", w.slots); !s.ok()) return s;
  if (w.home.count != w.slots.count) {
    return absl::InvalidArgumentError(
        absl::StrCat("weights.slots.count: must equal weights.home.count = ", w.home.count, ", got ", w.slots.count));
  }
  for (int32_t k = 0; k < w.home.count; ++k) {
    if (TensorBytes(w.home.tensor[k]) != TensorBytes(w.slots.tensor[k])) {
      return absl::InvalidArgumentError(absl::StrCat("weights.slots.tensor[", k, "]: holds ",
                                                     TensorBytes(w.slots.tensor[k]), " bytes per expert, the home ",
                                                     "tensor ", TensorBytes(w.home.tensor[k])));
    }
  }
  return absl::OkStatus();
}

int64_t ElementBytes(kernels::GradType type) { return type == kernels::GradType::kBfloat16 ? 2 : 4; }

absl::Status CheckGradients(const GradientLayout& g) {
  if (g.slot_type != kernels::GradType::kFloat32 && g.slot_type != kernels::GradType::kBfloat16) {
    return absl::InvalidArgumentError(
        absl::StrCat("gradients.slot_type: must be float32 or bfloat16, got ", static_cast<int>(g.slot_type)));
  }
  if (absl::Status s = CheckTensors("gradients.slots", g.slots); !s.ok()) return s;
  if (absl::Status s = CheckTensors("gradients.home", g.home); !s.ok()) return s;
  if (g.home.count != g.slots.count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gradients.slots.count: must equal gradients.home.count = ", g.home.count, ", got ", g.slots.count));
  }
  const int64_t element = ElementBytes(g.slot_type);
  for (int32_t k = 0; k < g.home.count; ++k) {
    const kernels::ExpertTensor& home = g.home.tensor[k];
    if (home.chunk_bytes % 4 != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "gradients.home.tensor[", k, "].chunk_bytes: float32 needs a multiple of 4, got ", home.chunk_bytes));
    }
    const int64_t slot_bytes = TensorBytes(g.slots.tensor[k]);
    if (slot_bytes % element != 0 || slot_bytes / element != TensorBytes(home) / 4) {
      return absl::InvalidArgumentError(absl::StrCat("gradients.slots.tensor[", k, "]: holds ", slot_bytes,
                                                     " bytes per expert, must be ", element, " x the ",
                                                     TensorBytes(home) / 4, " float32 values of the home tensor"));
    }
  }
  return absl::OkStatus();
}

// Runs `after` behind the exchange: now on an ordered plane, then holds the trainer's stream;
// in Wait on a host plane.
absl::StatusOr<std::unique_ptr<PendingExchange>> Staged(DataPlane& plane, MoveWorkspace::Regions& regions,
                                                        absl::StatusOr<std::unique_ptr<PendingExchange>> exchange,
                                                        std::function<absl::Status()> after,
                                                        std::optional<uintptr_t> trainer_stream) {
  if (!exchange.ok()) return exchange.status();
  regions.in_flight = !plane.ordered();
  if (plane.ordered()) {
    if (absl::Status s = after(); !s.ok()) return s;
    after = nullptr;
    if (trainer_stream.has_value()) {
      if (absl::Status s = plane.HoldStream(*trainer_stream); !s.ok()) return s;
    }
  }
  return std::make_unique<StagedExchange>(plane, *std::move(exchange), std::move(after), &regions.in_flight);
}

// Before the exchange: the plane waits for the trainer's work so far and packs the `count`
// experts of `tensors` listed at `list` (plane memory) into `send`.
absl::Status PackOutgoing(DataPlane& plane, std::optional<uintptr_t> trainer_stream,
                          const kernels::ExpertTensors& tensors, const int32_t* list, int32_t count, char* send) {
  if (trainer_stream.has_value()) {
    if (absl::Status s = plane.AwaitStream(*trainer_stream); !s.ok()) return s;
  }
  if (count == 0) return absl::OkStatus();
  return plane.Pack(tensors, list, count, send);
}

}  // namespace

absl::StatusOr<std::unique_ptr<PendingExchange>> StartTensorMoves(Transport& transport, const LayerTables& tables,
                                                                  const ExpertLayout& weights, MoveWorkspace& workspace,
                                                                  std::optional<uintptr_t> trainer_stream,
                                                                  MovedBytes* moved) {
  if (absl::Status s = CheckTables(transport, tables); !s.ok()) return s;
  if (absl::Status s = CheckWeights(weights); !s.ok()) return s;
  const int me = tables.rank();
  const int per_rank = tables.experts() / tables.ranks();
  const auto sent = static_cast<int32_t>(tables.sent().size());
  const auto received = static_cast<int32_t>(tables.received().size());
  const int64_t packed = kernels::PackedExpertBytes(weights.home);
  DataPlane& plane = transport.plane();
  absl::StatusOr<MoveWorkspace::Regions*> regions = TensorExchange::Reserve(
      workspace, plane, static_cast<size_t>(sent * packed), static_cast<size_t>(received * packed));
  if (!regions.ok()) return regions.status();
  char* send = (*regions)->send.data();
  char* recv = (*regions)->recv.data();

  std::vector<SendOp> sends;
  std::vector<RecvOp> recvs;
  MovedBytes count;
  int32_t sent_index = -1;
  for (const ReplicaTransfer& t : tables.transfers()) {
    const auto tag = static_cast<uint32_t>(t.expert);
    if (t.home == me) {
      if (sent_index < 0 || tables.sent()[static_cast<size_t>(sent_index)] != t.expert - me * per_rank) ++sent_index;
      sends.push_back({t.guest, send + sent_index * packed, static_cast<size_t>(packed), tag});
      count.sent += packed;
    } else if (t.guest == me) {
      recvs.push_back({t.home, recv + static_cast<int64_t>(recvs.size()) * packed, static_cast<size_t>(packed), tag});
      count.received += packed;
    }
  }

  if (absl::Status s = PackOutgoing(plane, trainer_stream, weights.home, tables.sent_on_plane(), sent, send); !s.ok()) {
    return s;
  }
  // A host plane unpacks in Wait, after the next plan may have been loaded: it keeps its own list
  // (an ordered plane unpacks now, from the tables' copy on the plane).
  const kernels::ExpertTensors slots = weights.slots;
  const int32_t* on_plane = tables.received_on_plane();
  std::vector<int32_t> kept = plane.ordered() ? std::vector<int32_t>() : tables.received();
  auto unpack = [&plane, slots, on_plane, list = std::move(kept), received, recv]() -> absl::Status {
    if (received == 0) return absl::OkStatus();
    return plane.Unpack(slots, plane.ordered() ? on_plane : list.data(), received, recv);
  };
  absl::StatusOr<std::unique_ptr<PendingExchange>> pending =
      Staged(plane, **regions, transport.StartExchange(std::move(sends), std::move(recvs)), unpack, trainer_stream);
  if (pending.ok() && moved != nullptr) *moved = count;
  return pending;
}

absl::StatusOr<std::unique_ptr<PendingExchange>> StartGradientReturn(Transport& transport, const LayerTables& tables,
                                                                     const GradientLayout& gradients,
                                                                     MoveWorkspace& workspace,
                                                                     std::optional<uintptr_t> trainer_stream,
                                                                     MovedBytes* moved) {
  if (absl::Status s = CheckTables(transport, tables); !s.ok()) return s;
  if (absl::Status s = CheckGradients(gradients); !s.ok()) return s;
  const int me = tables.rank();
  const int per_rank = tables.experts() / tables.ranks();
  // A guest sends its replicas' gradients in transfer order (the slots it received, listed in
  // the tables); a home keeps what comes in transfer order too: by expert, then by guest.
  std::vector<ReplicaTransfer> incoming;
  for (const ReplicaTransfer& t : tables.transfers()) {
    if (t.home == me) incoming.push_back(t);
  }
  const auto hosted = static_cast<int32_t>(tables.received().size());
  const int64_t packed = kernels::PackedExpertBytes(gradients.slots);
  DataPlane& plane = transport.plane();
  absl::StatusOr<MoveWorkspace::Regions*> regions = TensorExchange::Reserve(
      workspace, plane, static_cast<size_t>(hosted * packed), incoming.size() * static_cast<size_t>(packed));
  if (!regions.ok()) return regions.status();
  char* send = (*regions)->send.data();
  char* recv = (*regions)->recv.data();

  std::vector<SendOp> sends;
  std::vector<RecvOp> recvs;
  MovedBytes count;
  for (const ReplicaTransfer& t : tables.transfers()) {
    const auto tag = static_cast<uint32_t>(t.expert);
    if (t.guest == me) {
      sends.push_back({t.home, send + static_cast<int64_t>(sends.size()) * packed, static_cast<size_t>(packed), tag});
      count.sent += packed;
    } else if (t.home == me) {
      recvs.push_back({t.guest, recv + static_cast<int64_t>(recvs.size()) * packed, static_cast<size_t>(packed), tag});
      count.received += packed;
    }
  }

  if (absl::Status s = PackOutgoing(plane, trainer_stream, gradients.slots, tables.received_on_plane(), hosted, send);
      !s.ok()) {
    return s;
  }
  auto add = [&plane, gradients, incoming = std::move(incoming), recv, packed, me, per_rank]() -> absl::Status {
    const int64_t element = ElementBytes(gradients.slot_type);
    for (size_t first = 0; first < incoming.size();) {
      size_t end = first;
      while (end < incoming.size() && incoming[end].expert == incoming[first].expert) ++end;
      const int local = incoming[first].expert - me * per_rank;
      for (int32_t k = 0; k < gradients.home.count; ++k) {
        const kernels::ExpertTensor& home = gradients.home.tensor[k];
        const int64_t values = home.chunk_bytes / 4;
        const int64_t tensor_offset = kernels::PackedOffset(gradients.slots, 0, k, 0);
        for (int64_t c = 0; c < home.chunks; ++c) {
          auto* dst = reinterpret_cast<float*>(kernels::ChunkAddress(home, local, c));
          for (size_t batch = first; batch < end; batch += kernels::kMaxSources) {
            kernels::GradSources sources;
            sources.type = gradients.slot_type;
            for (size_t j = batch; j < std::min(end, batch + kernels::kMaxSources); ++j) {
              sources.source[sources.count++] =
                  recv + static_cast<int64_t>(j) * packed + tensor_offset + c * values * element;
            }
            if (absl::Status s = plane.AccumulateMany(dst, sources, static_cast<size_t>(values)); !s.ok()) return s;
          }
        }
      }
      first = end;
    }
    return absl::OkStatus();
  };
  absl::StatusOr<std::unique_ptr<PendingExchange>> pending =
      Staged(plane, **regions, transport.StartExchange(std::move(sends), std::move(recvs)), add, trainer_stream);
  if (pending.ok() && moved != nullptr) *moved = count;
  return pending;
}

}  // namespace taot::client

#include "taot/client/layer_tables.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "taot/client/reroute.h"

namespace taot::client {
namespace {

// The upload's layout: int64 sections first, so every section is aligned for its type.
struct Layout {
  size_t pair_end = 0, guest_begin = 0, guest_rank = 0, virtual_id = 0, sent = 0, received = 0, bytes = 0;
};

Layout LayoutFor(size_t guests, size_t experts, size_t sent, size_t received) {
  Layout l;
  l.pair_end = 0;
  l.guest_begin = l.pair_end + guests * sizeof(int64_t);
  l.guest_rank = l.guest_begin + (experts + 1) * sizeof(int32_t);
  l.virtual_id = l.guest_rank + guests * sizeof(int32_t);
  l.sent = l.virtual_id + guests * sizeof(int32_t);
  l.received = l.sent + sent * sizeof(int32_t);
  l.bytes = l.received + received * sizeof(int32_t);
  return l;
}

template <typename T>
void Put(char* staging, size_t offset, const std::vector<T>& values) {
  if (!values.empty()) std::memcpy(staging + offset, values.data(), values.size() * sizeof(T));
}

}  // namespace

absl::Status LayerTables::Load(Transport& transport, const Plan& plan, int experts, int slots) {
  if (absl::Status s = Stage(transport, plan, experts, slots); !s.ok()) return s;
  absl::Status s = Upload();
  if (!s.ok()) loaded_ = false;  // the plane holds neither this plan nor, whole, the last one
  return s;
}

absl::Status LayerTables::Reserve(DataPlane& plane, size_t bytes) {
  if (bytes <= buffer_bytes_ && staging_ != nullptr) return absl::OkStatus();
  if (absl::Status s = plane.Finish(wait_); !s.ok()) return s;
  loaded_ = false;  // the old tables go with their memory
  staging_.reset();
  buffer_.reset();
  buffer_bytes_ = 0;
  absl::StatusOr<std::unique_ptr<StagingBuffer>> staging = plane.NewStaging(bytes);
  if (!staging.ok()) return staging.status();
  absl::StatusOr<std::unique_ptr<TransportBuffer>> buffer = plane.NewBuffer(bytes);
  if (!buffer.ok()) return buffer.status();
  staging_ = *std::move(staging);
  buffer_ = *std::move(buffer);
  buffer_bytes_ = bytes;
  return absl::OkStatus();
}

absl::Status LayerTables::Upload(std::optional<uintptr_t> trainer_stream) {
  if (!loaded_) return absl::FailedPreconditionError("tables: no plan is staged");
  DataPlane& plane = transport_->plane();
  if (trainer_stream.has_value()) {
    if (absl::Status s = plane.AwaitStream(*trainer_stream); !s.ok()) return s;
  }
  if (absl::Status s = plane.CopyIn(*staging_, staged_bytes_, buffer_->data()); !s.ok()) return s;
  if (trainer_stream.has_value()) return plane.HoldStream(*trainer_stream);
  return absl::OkStatus();
}

absl::Status LayerTables::Stage(Transport& transport, const Plan& plan, int experts, int slots) {
  if (transport_ != nullptr && transport_ != &transport) {
    return absl::FailedPreconditionError("tables: hold another transport's memory; use one per transport");
  }
  const int R = transport.size();
  const int me = transport.rank();
  absl::StatusOr<RerouteTable> route = RerouteTable::For(plan, R, experts, me, slots);
  if (!route.ok()) return route.status();
  const int per_rank = experts / R;
  std::vector<ReplicaTransfer> transfers = Transfers(plan, per_rank);
  std::vector<int32_t> sent, received;
  for (const ReplicaTransfer& t : transfers) {
    if (t.guest == me && t.slot >= slots) {
      return absl::InvalidArgumentError(absl::StrCat("plan.replicas: rank ", me, " holds more than the ", slots,
                                                     " slots per rank (expert ", t.expert, " in slot ", t.slot, ")"));
    }
    if (t.home == me && (sent.empty() || sent.back() != t.expert - me * per_rank)) {
      sent.push_back(t.expert - me * per_rank);
    }
    if (t.guest == me) received.push_back(t.slot);
  }

  // Every section sits where the fullest plan of this shape (every slot filled, every home expert
  // sent) puts it, so the tables keep one address and one size while the shape does: a CUDA graph
  // that captured the upload and the kernels reading the tables replays on every later plan.
  const size_t per_rank_slots = static_cast<size_t>(slots);
  const Layout layout = LayoutFor(static_cast<size_t>(R) * per_rank_slots, static_cast<size_t>(experts),
                                  static_cast<size_t>(per_rank), per_rank_slots);
  if (route->guests.size() > static_cast<size_t>(R) * per_rank_slots || sent.size() > static_cast<size_t>(per_rank) ||
      received.size() > per_rank_slots) {
    return absl::InvalidArgumentError(
        absl::StrCat("plan.replicas: more than the ", R * slots, " replicas of ", R, " ranks x ", slots, " slots"));
  }
  DataPlane& plane = transport.plane();
  if (absl::Status s = Reserve(plane, layout.bytes); !s.ok()) return s;
  if (absl::Status s = plane.AwaitStaging(*staging_, wait_); !s.ok()) return s;
  char* staging = static_cast<char*>(staging_->data());
  std::memset(staging, 0, layout.bytes);
  Put(staging, layout.pair_end, route->pair_end);
  Put(staging, layout.guest_begin, route->offsets);
  Put(staging, layout.guest_rank, route->guests);
  Put(staging, layout.virtual_id, route->virtual_id);
  Put(staging, layout.sent, sent);
  Put(staging, layout.received, received);
  char* base = static_cast<char*>(buffer_->data());

  transport_ = &transport;
  loaded_ = true;
  staged_bytes_ = layout.bytes;
  rank_ = me;
  ranks_ = R;
  experts_ = experts;
  slots_ = slots;
  transfers_ = std::move(transfers);
  sent_ = std::move(sent);
  received_ = std::move(received);
  route_.ranks = R;
  route_.experts = experts;
  route_.slots = slots;
  route_.pair_end = reinterpret_cast<const int64_t*>(base + layout.pair_end);
  route_.guest_begin = reinterpret_cast<const int32_t*>(base + layout.guest_begin);
  route_.guest_rank = reinterpret_cast<const int32_t*>(base + layout.guest_rank);
  route_.virtual_id = reinterpret_cast<const int32_t*>(base + layout.virtual_id);
  sent_on_plane_ = reinterpret_cast<const int32_t*>(base + layout.sent);
  received_on_plane_ = reinterpret_cast<const int32_t*>(base + layout.received);
  return absl::OkStatus();
}

}  // namespace taot::client

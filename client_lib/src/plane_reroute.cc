#include "taot/client/plane_reroute.h"

#include "absl/strings/str_cat.h"

namespace taot::client {

absl::Status RerouteWorkspace::GrowTo(DataPlane& plane, size_t bytes) {
  if (bytes <= bytes_ && buffer_ != nullptr) return absl::OkStatus();
  if (absl::Status s = plane.Finish(wait_); !s.ok()) return s;
  buffer_.reset();
  bytes_ = 0;
  absl::StatusOr<std::unique_ptr<TransportBuffer>> buffer = plane.NewBuffer(bytes);
  if (!buffer.ok()) return buffer.status();
  buffer_ = *std::move(buffer);
  bytes_ = bytes;
  ++grows_;
  return absl::OkStatus();
}

absl::Status ReserveRerouteWorkspace(Transport& transport, int experts, int slots, int64_t max_pairs,
                                     RerouteWorkspace& workspace) {
  const int R = transport.size();
  if (experts <= 0 || experts % R != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("experts: must be a positive multiple of the ranks (", R, "), got ", experts));
  }
  if (slots < 0) return absl::InvalidArgumentError(absl::StrCat("slots: must be >= 0, got ", slots));
  if (max_pairs < 0) return absl::InvalidArgumentError(absl::StrCat("max_pairs: must be >= 0, got ", max_pairs));
  kernels::RouteTable shape;  // the sizes read only the shape
  shape.ranks = R;
  shape.experts = experts;
  shape.slots = slots;
  DataPlane& plane = transport.plane();
  return workspace.GrowTo(plane, plane.RerouteWorkspaceBytes(max_pairs, shape));
}

absl::Status StartReroute(Transport& transport, const LayerTables& tables, const int32_t* expert_ids, int64_t pairs,
                          const RerouteOutputs& outputs, RerouteWorkspace& workspace,
                          std::optional<uintptr_t> trainer_stream) {
  if (!tables.loaded() || tables.transport() != &transport) {
    return absl::FailedPreconditionError("tables: no plan is loaded on this transport");
  }
  if (pairs < 0) return absl::InvalidArgumentError(absl::StrCat("pairs: must be >= 0, got ", pairs));
  if (pairs > 0 && expert_ids == nullptr) return absl::InvalidArgumentError("expert_ids: must not be null");
  for (auto [field, p] : {std::pair<const char*, const void*>{"outputs.virtual_expert", outputs.virtual_expert},
                          {"outputs.dest_rank", outputs.dest_rank},
                          {"outputs.send_counts", outputs.send_counts},
                          {"outputs.order", outputs.order},
                          {"outputs.check", outputs.check}}) {
    if (p == nullptr) return absl::InvalidArgumentError(absl::StrCat(field, ": must not be null"));
  }
  DataPlane& plane = transport.plane();
  const kernels::RouteTable route = tables.route();
  if (absl::Status s = workspace.GrowTo(plane, plane.RerouteWorkspaceBytes(pairs, route)); !s.ok()) return s;
  if (trainer_stream.has_value()) {
    if (absl::Status s = plane.AwaitStream(*trainer_stream); !s.ok()) return s;
  }
  if (absl::Status s =
          plane.Reroute(expert_ids, pairs, route, outputs.virtual_expert, outputs.dest_rank, outputs.send_counts,
                        outputs.order, workspace.data(), workspace.bytes(), outputs.check);
      !s.ok()) {
    return s;
  }
  if (trainer_stream.has_value()) return plane.HoldStream(*trainer_stream);
  return absl::OkStatus();
}

}  // namespace taot::client

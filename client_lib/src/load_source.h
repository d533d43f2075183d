// Where a layer's counts come from for the client: a host row the trainer counted, or the
// router's ids in the transport's memory, counted and gathered there (on NCCL: on the side
// stream, with one device-to-host copy of every rank's counts). Internal to libtaot_client.
//
// Each rank's counts carry a RankTag through the same all-gather: what the rank knows before the
// plan. With every rank's tag in hand, every rank reaches the same verdict on which plan the layer
// uses from the same gathered values, so local and predictive modes need no second collective to
// agree on it (docs/design.md, "One gather per layer").
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "taot/client/client.h"
#include "taot/client/transport.h"

namespace taot::client {

// What a rank adds to its counts in a layer's all-gather.
struct RankTag {
  int64_t ready = 0;            // registered with the daemon (remote mode's return to it)
  int64_t holds_placement = 0;  // predictive mode: the daemon's placement for this layer arrived
  int64_t placement_hash = 0;   // and its PlanHash
  friend bool operator==(const RankTag&, const RankTag&) = default;
};
inline constexpr size_t kTagWords = 3;
static_assert(sizeof(RankTag) == kTagWords * sizeof(int64_t));

class LoadSource {
 public:
  virtual ~LoadSource() = default;
  // This rank's row (remote mode reports it to the daemon); valid until the next call.
  virtual absl::StatusOr<std::span<const int64_t>> Row() = 0;
  // Every rank's row into `load` (R x E, rank-major) and every rank's tag into `tags` (R), `mine`
  // riding along with this rank's row. A collective: every rank calls it for the same layer.
  virtual absl::Status Gather(const RankTag& mine, std::span<int64_t> load, std::span<RankTag> tags) = 0;
};

// HostRow's gather buffers (this rank's row and tag, every rank's), kept by the caller between
// layers.
struct HostRowBuffers {
  std::vector<int64_t> mine, all;
};

// A row the trainer counted on the host (already range-checked).
class HostRow final : public LoadSource {
 public:
  HostRow(Transport& transport, std::span<const int64_t> row, absl::Duration timeout, HostRowBuffers& buffers)
      : transport_(transport), row_(row), timeout_(timeout), buffers_(buffers) {}
  absl::StatusOr<std::span<const int64_t>> Row() override { return row_; }
  absl::Status Gather(const RankTag& mine, std::span<int64_t> load, std::span<RankTag> tags) override;

 private:
  Transport& transport_;
  std::span<const int64_t> row_;
  const absl::Duration timeout_;
  HostRowBuffers& buffers_;
};

// PlaneIds' buffers in the plane's memory, made once and kept between layers: this rank's
// E + 5 entries (counts, the count's RouteCheck, the tag) and every rank's.
struct PlaneCounts {
  std::unique_ptr<TransportBuffer> mine, all;
  std::vector<int64_t> host;  // the downloaded entries
  size_t entries = 0;         // E + 5
  int ranks = 0;
};

// The router's ids in the transport's memory: counted by the plane's kernel after the work on
// the trainer's stream, gathered there and downloaded once.
class PlaneIds final : public LoadSource {
 public:
  PlaneIds(Transport& transport, const RouterIds& ids, std::optional<uintptr_t> trainer_stream, int experts,
           absl::Duration timeout, PlaneCounts& buffers)
      : transport_(transport),
        ids_(ids),
        trainer_stream_(trainer_stream),
        experts_(experts),
        timeout_(timeout),
        buffers_(buffers) {}
  absl::StatusOr<std::span<const int64_t>> Row() override;
  absl::Status Gather(const RankTag& mine, std::span<int64_t> load, std::span<RankTag> tags) override;

 private:
  // Counts this rank's ids into buffers_.mine and writes its tag after them.
  absl::Status Count(const RankTag& tag);
  // The count's RouteCheck on this rank's downloaded entries: an id outside [0, E) is refused
  // here, as a bad host row is (the other ranks' own checks speak for their ids).
  absl::Status CheckIds(std::span<const int64_t> entries) const;

  Transport& transport_;
  const RouterIds ids_;
  const std::optional<uintptr_t> trainer_stream_;
  const int experts_;
  const absl::Duration timeout_;
  PlaneCounts& buffers_;
};

}  // namespace taot::client

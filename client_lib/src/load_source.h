// Where a layer's counts come from for the client: a host row the trainer counted, or the
// router's ids in the transport's memory, counted and gathered there (on NCCL: on the side
// stream, with one device-to-host copy of every rank's counts). Internal to libtaot_client.
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

class LoadSource {
 public:
  virtual ~LoadSource() = default;
  // This rank's row (remote mode reports it to the daemon); valid until the next call.
  virtual absl::StatusOr<std::span<const int64_t>> Row() = 0;
  // Every rank's row into `load` (R x E, rank-major), each rank's `flag` riding along: true when
  // every rank's is set. A collective: every rank calls it for the same layer.
  virtual absl::StatusOr<bool> Gather(bool flag, std::span<int64_t> load) = 0;
};

// A row the trainer counted on the host (already range-checked).
class HostRow final : public LoadSource {
 public:
  // `buffer` is the gather's send buffer, kept by the caller between layers.
  HostRow(Transport& transport, std::span<const int64_t> row, absl::Duration timeout, std::vector<int64_t>& buffer)
      : transport_(transport), row_(row), timeout_(timeout), buffer_(buffer) {}
  absl::StatusOr<std::span<const int64_t>> Row() override { return row_; }
  absl::StatusOr<bool> Gather(bool flag, std::span<int64_t> load) override;

 private:
  Transport& transport_;
  std::span<const int64_t> row_;
  const absl::Duration timeout_;
  std::vector<int64_t>& buffer_;
};

// PlaneIds' buffers in the plane's memory, grown once and kept between layers: this rank's
// E + 3 entries (counts, the count's RouteCheck, the flag) and every rank's.
struct PlaneCounts {
  std::unique_ptr<TransportBuffer> mine, all;
  std::vector<int64_t> host;  // the downloaded entries
  size_t entries = 0;         // E + 3
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
  absl::StatusOr<bool> Gather(bool flag, std::span<int64_t> load) override;

 private:
  // Counts this rank's ids into buffers_.mine (and sets its flag).
  absl::Status Count(bool flag);
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

#include "load_source.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "taot/kernels/reroute.h"

namespace taot::client {
namespace {

// The flag bit of a host row's first entry: above every valid entry (at most 2^40), below the sign.
constexpr int64_t kFlagBit = int64_t{1} << 62;

// A plane rank's entries: E counts, the RouteCheck (two entries), the flag.
static_assert(sizeof(kernels::RouteCheck) == 2 * sizeof(int64_t));
constexpr size_t kExtraEntries = 3;

}  // namespace

absl::StatusOr<bool> HostRow::Gather(bool flag, std::span<int64_t> load) {
  buffer_.assign(row_.begin(), row_.end());
  if (flag) buffer_[0] |= kFlagBit;
  if (absl::Status s = transport_.AllGather(buffer_, load, timeout_); !s.ok()) return s;
  bool all = true;
  for (size_t r = 0; r < load.size(); r += row_.size()) {
    all = all && (load[r] & kFlagBit) != 0;
    load[r] &= ~kFlagBit;
  }
  return all;
}

absl::Status PlaneIds::Count(bool flag) {
  DataPlane& plane = transport_.plane();
  const size_t entries = static_cast<size_t>(experts_) + kExtraEntries;
  if (buffers_.entries != entries || buffers_.ranks != transport_.size()) {
    absl::StatusOr<std::unique_ptr<TransportBuffer>> mine = plane.NewBuffer(entries * sizeof(int64_t));
    if (!mine.ok()) return mine.status();
    absl::StatusOr<std::unique_ptr<TransportBuffer>> all =
        plane.NewBuffer(entries * static_cast<size_t>(transport_.size()) * sizeof(int64_t));
    if (!all.ok()) return all.status();
    buffers_.mine = *std::move(mine);
    buffers_.all = *std::move(all);
    buffers_.host.assign(entries * static_cast<size_t>(transport_.size()), 0);
    buffers_.entries = entries;
    buffers_.ranks = transport_.size();
  }
  auto* mine = static_cast<int64_t*>(buffers_.mine->data());
  if (trainer_stream_.has_value()) {
    if (absl::Status s = plane.AwaitStream(*trainer_stream_); !s.ok()) return s;
  }
  if (absl::Status s = plane.CountExperts(ids_.data, ids_.wide, ids_.pairs, experts_, mine,
                                          reinterpret_cast<kernels::RouteCheck*>(mine + experts_));
      !s.ok()) {
    return s;
  }
  return plane.SetFlag(mine + experts_ + 2, flag);
}

absl::Status PlaneIds::CheckIds(std::span<const int64_t> entries) const {
  kernels::RouteCheck check;
  std::memcpy(&check, entries.data() + experts_, sizeof check);
  if (check.first_bad_pair >= ids_.pairs) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("ids[", check.first_bad_pair, "]: must be an expert in [0, ", experts_, ")"));
}

absl::StatusOr<std::span<const int64_t>> PlaneIds::Row() {
  if (absl::Status s = Count(true); !s.ok()) return s;
  DataPlane& plane = transport_.plane();
  std::span<int64_t> row(buffers_.host.data(), buffers_.entries);
  if (absl::Status s = plane.Download(static_cast<const int64_t*>(buffers_.mine->data()), row); !s.ok()) return s;
  if (absl::Status s = plane.Finish(timeout_); !s.ok()) return s;
  if (absl::Status s = CheckIds(row); !s.ok()) return s;
  return row.first(static_cast<size_t>(experts_));
}

absl::StatusOr<bool> PlaneIds::Gather(bool flag, std::span<int64_t> load) {
  if (absl::Status s = Count(flag); !s.ok()) return s;
  DataPlane& plane = transport_.plane();
  if (absl::Status s =
          transport_.AllGatherOnPlane(static_cast<const int64_t*>(buffers_.mine->data()),
                                      static_cast<int64_t*>(buffers_.all->data()), buffers_.entries, timeout_);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = plane.Download(static_cast<const int64_t*>(buffers_.all->data()), buffers_.host); !s.ok()) {
    return s;
  }
  if (absl::Status s = plane.Finish(timeout_); !s.ok()) return s;
  bool all = true;
  const auto E = static_cast<size_t>(experts_);
  for (int r = 0; r < transport_.size(); ++r) {
    std::span<const int64_t> entries(buffers_.host.data() + static_cast<size_t>(r) * buffers_.entries,
                                     buffers_.entries);
    if (r == transport_.rank()) {
      if (absl::Status s = CheckIds(entries); !s.ok()) return s;
    }
    std::copy(entries.begin(), entries.begin() + static_cast<std::ptrdiff_t>(E),
              load.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(r) * E));
    all = all && entries[E + 2] != 0;
  }
  return all;
}

}  // namespace taot::client

#include "load_source.h"

#include <algorithm>
#include <array>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "taot/kernels/reroute.h"

namespace taot::client {
namespace {

// A plane rank's entries: E counts, the RouteCheck (two entries), the tag.
static_assert(sizeof(kernels::RouteCheck) == 2 * sizeof(int64_t));
constexpr size_t kCheckEntries = 2;

// The tag as the words that travel: written by TagWords, read back by Split.
std::array<int64_t, kTagWords> TagWords(const RankTag& tag) {
  return {tag.ready, tag.holds_placement, tag.placement_hash};
}

// Splits gathered entries (per rank: E counts, then `skip` entries, then the tag) into the load
// matrix and the tags.
void Split(std::span<const int64_t> gathered, size_t experts, size_t skip, std::span<int64_t> load,
           std::span<RankTag> tags) {
  const size_t entries = experts + skip + kTagWords;
  for (size_t r = 0; r < tags.size(); ++r) {
    const int64_t* from = gathered.data() + r * entries;
    std::copy(from, from + experts, load.begin() + static_cast<std::ptrdiff_t>(r * experts));
    const int64_t* tag = from + experts + skip;
    tags[r] = {tag[0], tag[1], tag[2]};
  }
}

}  // namespace

absl::Status HostRow::Gather(const RankTag& mine, std::span<int64_t> load, std::span<RankTag> tags) {
  std::vector<int64_t>& send = buffers_.mine;
  send.assign(row_.begin(), row_.end());
  const std::array<int64_t, kTagWords> tag = TagWords(mine);
  send.insert(send.end(), tag.begin(), tag.end());
  buffers_.all.resize(send.size() * tags.size());
  if (absl::Status s = transport_.AllGather(send, buffers_.all, timeout_); !s.ok()) return s;
  Split(buffers_.all, row_.size(), 0, load, tags);
  return absl::OkStatus();
}

absl::Status PlaneIds::Count(const RankTag& tag) {
  DataPlane& plane = transport_.plane();
  const size_t entries = static_cast<size_t>(experts_) + kCheckEntries + kTagWords;
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
  kernels::Words words;
  const std::array<int64_t, kTagWords> values = TagWords(tag);
  std::copy(values.begin(), values.end(), words.value);
  words.count = kTagWords;
  return plane.WriteWords(mine + experts_ + kCheckEntries, words);
}

absl::Status PlaneIds::CheckIds(std::span<const int64_t> entries) const {
  kernels::RouteCheck check;
  std::memcpy(&check, entries.data() + experts_, sizeof check);
  if (check.first_bad_pair >= ids_.pairs) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("ids[", check.first_bad_pair, "]: must be an expert in [0, ", experts_, ")"));
}

absl::StatusOr<std::span<const int64_t>> PlaneIds::Row() {
  if (absl::Status s = Count(RankTag{}); !s.ok()) return s;
  DataPlane& plane = transport_.plane();
  std::span<int64_t> row(buffers_.host.data(), buffers_.entries);
  if (absl::Status s = plane.Download(static_cast<const int64_t*>(buffers_.mine->data()), row); !s.ok()) return s;
  if (absl::Status s = plane.Finish(timeout_); !s.ok()) return s;
  if (absl::Status s = CheckIds(row); !s.ok()) return s;
  return row.first(static_cast<size_t>(experts_));
}

absl::Status PlaneIds::Gather(const RankTag& mine, std::span<int64_t> load, std::span<RankTag> tags) {
  if (absl::Status s = Count(mine); !s.ok()) return s;
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
  const size_t me = static_cast<size_t>(transport_.rank()) * buffers_.entries;
  if (absl::Status s = CheckIds(std::span<const int64_t>(buffers_.host).subspan(me, buffers_.entries)); !s.ok()) {
    return s;
  }
  Split(buffers_.host, static_cast<size_t>(experts_), kCheckEntries, load, tags);
  return absl::OkStatus();
}

}  // namespace taot::client

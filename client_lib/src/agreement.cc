#include "taot/client/agreement.h"

#include <vector>

namespace taot::client {

absl::StatusOr<bool> AllHoldTheSamePlan(Transport& transport, const PlanIdentity& mine, absl::Duration timeout) {
  const int64_t row[2] = {static_cast<int64_t>(mine.version), static_cast<int64_t>(mine.hash)};
  std::vector<int64_t> all(2 * static_cast<size_t>(transport.size()));
  if (absl::Status s = transport.AllGather(row, all, timeout); !s.ok()) return s;
  for (size_t i = 0; i < all.size(); i += 2) {
    const PlanIdentity theirs{static_cast<uint64_t>(all[i]), static_cast<uint64_t>(all[i + 1]), {}, {}};
    if (!theirs.SamePlanAs(mine)) return false;
  }
  return true;
}

}  // namespace taot::client

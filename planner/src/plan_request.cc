#include "taot/planner/plan_request.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "absl/strings/str_cat.h"
#include "taot/planner/plan_validator.h"

namespace taot {
namespace {

absl::Status CheckShape(const PlanRequest& r) {
  const int R = r.topology.ranks();
  if (R <= 0) return absl::InvalidArgumentError("topology.ranks: must be a positive integer, got 0");
  if (r.experts <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("experts: must be a positive integer, got ", r.experts));
  }
  if (absl::Status s = CheckRequestSize(R, r.experts); !s.ok()) return s;
  if (r.experts % R != 0) {
    return absl::InvalidArgumentError(absl::StrCat("experts: ", r.experts,
                                                   " is not divisible by the number of ranks ", R,
                                                   " (every rank hosts experts/ranks experts)"));
  }
  if (r.slots_per_rank < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("slots_per_rank: must be >= 0, got ", r.slots_per_rank));
  }
  if (r.expert_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("expert_bytes: must be >= 0, got ", r.expert_bytes));
  }
  if (r.target_imbalance_pct &&
      (!std::isfinite(*r.target_imbalance_pct) || *r.target_imbalance_pct < 0 ||
       *r.target_imbalance_pct > 1e6)) {
    return absl::InvalidArgumentError(
        absl::StrCat("target_imbalance_pct: must be a number in [0, 1e6], got ",
                     *r.target_imbalance_pct));
  }
  if (r.load.sources() != R || r.load.experts() != r.experts) {
    return absl::InvalidArgumentError(absl::StrCat(
        "load: must be ", R, " rows (ranks) x ", r.experts, " columns (experts), got ",
        r.load.sources(), " x ", r.load.experts()));
  }
  return absl::OkStatus();
}

absl::Status CheckLoad(const PlanRequest& r) {
  int64_t total = 0;
  for (int s = 0; s < r.load.sources(); ++s) {
    const std::span<const int64_t> row = r.load.row(s);
    if (const std::optional<size_t> e = FirstOutOfRange(row)) {
      return absl::InvalidArgumentError(
          absl::StrCat("load[", s, "][", *e, "]: must be in [0, ", kMaxTokensPerEntry, "], got ", row[*e]));
    }
    // In range, a row sums to at most experts x 2^40: no overflow.
    for (const int64_t v : row) total += v;
    if (total > kMaxTotalTokens) {
      return absl::InvalidArgumentError(absl::StrCat("load: the total number of tokens must be at most ", kMaxTotalTokens));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckRequestSize(int64_t ranks, int64_t experts, absl::string_view ranks_field,
                              absl::string_view experts_field) {
  if (ranks < 1 || ranks > kMaxRanks) {
    return absl::InvalidArgumentError(
        absl::StrCat(ranks_field, ": must be in [1, ", kMaxRanks, "], got ", ranks));
  }
  if (experts < 1 || experts > kMaxExperts) {
    return absl::InvalidArgumentError(
        absl::StrCat(experts_field, ": must be in [1, ", kMaxExperts, "], got ", experts));
  }
  if (ranks * experts > kMaxLoadEntries) {
    return absl::InvalidArgumentError(absl::StrCat(
        ranks_field, " x ", experts_field, ": ", ranks, " x ", experts,
        " load entries is more than the limit of ", kMaxLoadEntries, " (2^24)"));
  }
  return absl::OkStatus();
}

std::optional<size_t> FirstOutOfRange(std::span<const int64_t> row) {
  // A negative entry or one above 2^40 has a bit at 40 or above; so has 2^40 itself, the one
  // valid entry the filter lets through to the exact search.
  static_assert(kMaxTokensPerEntry == int64_t{1} << 40);
  uint64_t bits = 0;
  for (const int64_t v : row) bits |= static_cast<uint64_t>(v);
  if ((bits >> 40) == 0) return std::nullopt;
  const auto bad = std::find_if(row.begin(), row.end(), [](int64_t v) { return v < 0 || v > kMaxTokensPerEntry; });
  if (bad == row.end()) return std::nullopt;
  return static_cast<size_t>(bad - row.begin());
}

absl::Status ValidateRequest(const PlanRequest& request) {
  if (absl::Status s = CheckShape(request); !s.ok()) return s;
  if (absl::Status s = CheckLoad(request); !s.ok()) return s;
  return ValidateReplicas(request, request.resident, "resident");
}

}  // namespace taot

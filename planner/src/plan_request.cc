#include "taot/planner/plan_request.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "taot/planner/plan_validator.h"

namespace taot {
namespace {

absl::Status CheckShape(const PlanRequest& r) {
  if (r.problem == nullptr) return absl::InvalidArgumentError("problem: must be set");
  if (absl::Status s = ValidateProblem(*r.problem); !s.ok()) return s;
  const int R = r.ranks();
  if (r.target_imbalance_pct &&
      (!std::isfinite(*r.target_imbalance_pct) || *r.target_imbalance_pct < 0 || *r.target_imbalance_pct > 1e6)) {
    return absl::InvalidArgumentError(
        absl::StrCat("target_imbalance_pct: must be a number in [0, 1e6], got ", *r.target_imbalance_pct));
  }
  if (r.load.sources() != R || r.load.experts() != r.experts()) {
    return absl::InvalidArgumentError(absl::StrCat("load: must be ", R, " rows (ranks) x ", r.experts(),
                                                   " columns (experts), got ", r.load.sources(), " x ",
                                                   r.load.experts()));
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
      return absl::InvalidArgumentError(
          absl::StrCat("load: the total number of tokens must be at most ", kMaxTotalTokens));
    }
  }
  return absl::OkStatus();
}

}  // namespace

PlanRequest EmptyRequest(std::shared_ptr<const Problem> problem) {
  PlanRequest request;
  request.load = LoadMatrix(problem->ranks(), problem->experts);
  request.problem = std::move(problem);
  return request;
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

absl::Status ValidateRequest(const PlanRequest& request, SlotLimit limit) {
  if (absl::Status s = CheckShape(request); !s.ok()) return s;
  if (absl::Status s = CheckLoad(request); !s.ok()) return s;
  return ValidateReplicas(request, request.resident, "resident", limit);
}

}  // namespace taot

#include "taot/planner/plan_request.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
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

// One pass over a row for both checks: the OR of its entries (any entry outside [0, 2^40) sets a
// bit at 40 or above) and its sum (unsigned, so that out-of-range entries wrap instead of
// overflowing; it is used only for rows in range). With `totals`, the row is also added into
// each expert's total in the same pass. Two passes were a tenth of RunPlanner's time at EP256,
// and the scorecard's own pass for the totals another; GCC picks the AVX2 clone at load time
// where the CPU has it.
struct RowScan {
  uint64_t bits = 0;
  uint64_t sum = 0;
};
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
__attribute__((target_clones("avx2", "default")))
#endif
RowScan
ScanRow(std::span<const int64_t> row, int64_t* __restrict totals) {
  RowScan scan;
  if (totals == nullptr) {
    for (const int64_t v : row) {
      scan.bits |= static_cast<uint64_t>(v);
      scan.sum += static_cast<uint64_t>(v);
    }
    return scan;
  }
  for (size_t e = 0; e < row.size(); ++e) {
    const int64_t v = row[e];
    scan.bits |= static_cast<uint64_t>(v);
    scan.sum += static_cast<uint64_t>(v);
    totals[e] = static_cast<int64_t>(static_cast<uint64_t>(totals[e]) + static_cast<uint64_t>(v));
  }
  return scan;
}

// `totals` (may be null): each expert's total, filled where the load is valid.
absl::Status CheckLoad(const PlanRequest& r, std::vector<int64_t>* totals) {
  if (totals != nullptr) totals->assign(static_cast<size_t>(r.load.experts()), 0);
  int64_t total = 0;
  for (int s = 0; s < r.load.sources(); ++s) {
    const std::span<const int64_t> row = r.load.row(s);
    const RowScan scan = ScanRow(row, totals != nullptr ? totals->data() : nullptr);
    if ((scan.bits >> 40) != 0) {
      if (const std::optional<size_t> e = FirstOutOfRange(row)) {
        return absl::InvalidArgumentError(
            absl::StrCat("load[", s, "][", *e, "]: must be in [0, ", kMaxTokensPerEntry, "], got ", row[*e]));
      }
    }
    // In range, a row sums to at most experts x 2^40: no overflow.
    total += static_cast<int64_t>(scan.sum);
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
  if (absl::Status s = CheckLoad(request, nullptr); !s.ok()) return s;
  return ValidateReplicas(request, request.resident, "resident", limit);
}

absl::Status ValidateRequest(const PlanRequest& request, SlotLimit limit, std::vector<int64_t>& expert_totals) {
  if (absl::Status s = CheckShape(request); !s.ok()) return s;
  if (absl::Status s = CheckLoad(request, &expert_totals); !s.ok()) return s;
  return ValidateReplicas(request, request.resident, "resident", limit);
}

}  // namespace taot

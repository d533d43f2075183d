#include "taot/planner/plan_request.h"

#include <cmath>
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
    for (int e = 0; e < r.load.experts(); ++e) {
      const int64_t v = r.load.at(s, e);
      if (v < 0 || v > kMaxTokensPerEntry) {
        return absl::InvalidArgumentError(absl::StrCat("load[", s, "][", e, "]: must be in [0, ",
                                                       kMaxTokensPerEntry, "], got ", v));
      }
      total += v;
      if (total > kMaxTotalTokens) {
        return absl::InvalidArgumentError(absl::StrCat(
            "load: the total number of tokens must be at most ", kMaxTotalTokens));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateRequest(const PlanRequest& request) {
  if (absl::Status s = CheckShape(request); !s.ok()) return s;
  if (absl::Status s = CheckLoad(request); !s.ok()) return s;
  return ValidateReplicas(request, request.resident, "resident");
}

}  // namespace taot

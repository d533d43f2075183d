#include "taot/planner/problem.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace taot {

absl::Status CheckRequestSize(int64_t ranks, int64_t experts, absl::string_view ranks_field,
                              absl::string_view experts_field) {
  if (ranks < 1 || ranks > kMaxRanks) {
    return absl::InvalidArgumentError(absl::StrCat(ranks_field, ": must be in [1, ", kMaxRanks, "], got ", ranks));
  }
  if (experts < 1 || experts > kMaxExperts) {
    return absl::InvalidArgumentError(
        absl::StrCat(experts_field, ": must be in [1, ", kMaxExperts, "], got ", experts));
  }
  if (ranks * experts > kMaxLoadEntries) {
    return absl::InvalidArgumentError(absl::StrCat(ranks_field, " x ", experts_field, ": ", ranks, " x ", experts,
                                                   " load entries is more than the limit of ", kMaxLoadEntries,
                                                   " (2^24)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateProblem(const Problem& p) {
  const int R = p.topology.ranks();
  if (R <= 0) return absl::InvalidArgumentError("topology.ranks: must be a positive integer, got 0");
  if (p.experts <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("experts: must be a positive integer, got ", p.experts));
  }
  if (absl::Status s = CheckRequestSize(R, p.experts); !s.ok()) return s;
  if (p.experts % R != 0) {
    return absl::InvalidArgumentError(absl::StrCat("experts: ", p.experts, " is not divisible by the number of ranks ",
                                                   R, " (every rank hosts experts/ranks experts)"));
  }
  if (p.slots_per_rank < 0) {
    return absl::InvalidArgumentError(absl::StrCat("slots_per_rank: must be >= 0, got ", p.slots_per_rank));
  }
  if (p.expert_bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat("expert_bytes: must be >= 0, got ", p.expert_bytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const Problem>> ShareProblem(Problem problem) {
  if (absl::Status s = ValidateProblem(problem); !s.ok()) return s;
  return std::make_shared<const Problem>(std::move(problem));
}

}  // namespace taot

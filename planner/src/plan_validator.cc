#include "taot/planner/plan_validator.h"

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace taot {
namespace {

absl::Status CheckAssignments(const PlanRequest& request, const Plan& plan) {
  const std::set<Replica> replicas(plan.replicas.begin(), plan.replicas.end());
  std::set<std::tuple<int, int, int>> seen;
  std::map<std::pair<int, int>, int64_t> sent;  // (source, expert) -> tokens sent to guests
  for (size_t i = 0; i < plan.assignments.size(); ++i) {
    const Assignment& a = plan.assignments[i];
    const std::string where = absl::StrCat("assignments[", i, "]: ");
    if (a.source < 0 || a.source >= request.ranks()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "source ", a.source, " is out of range [0, ", request.ranks(), ")"));
    }
    if (a.expert < 0 || a.expert >= request.experts) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "expert ", a.expert, " is out of range [0, ", request.experts, ")"));
    }
    if (a.rank < 0 || a.rank >= request.ranks()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "rank ", a.rank, " is out of range [0, ", request.ranks(), ")"));
    }
    if (a.tokens <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(where, "tokens must be > 0, got ", a.tokens));
    }
    if (!replicas.contains(Replica{a.expert, a.rank})) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "rank ", a.rank, " holds no replica of expert ", a.expert));
    }
    if (!seen.insert({a.source, a.expert, a.rank}).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, "(source ", a.source, ", expert ",
                                                     a.expert, ", rank ", a.rank,
                                                     ") appears twice"));
    }
    int64_t& total = sent[{a.source, a.expert}];
    total += a.tokens;
    const int64_t load = request.load.at(a.source, a.expert);
    if (total > load) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, "source ", a.source, " sends ", total, " tokens of expert ", a.expert,
          " to guests but routes only ", load, " to it"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateReplicas(const PlanRequest& request, std::span<const Replica> replicas,
                              std::string_view field) {
  std::set<Replica> seen;
  std::vector<int> per_rank(static_cast<size_t>(request.ranks()), 0);
  for (size_t i = 0; i < replicas.size(); ++i) {
    const Replica& r = replicas[i];
    const std::string where = absl::StrCat(std::string(field), "[", i, "]: ");
    if (r.expert < 0 || r.expert >= request.experts) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "expert ", r.expert, " is out of range [0, ", request.experts, ")"));
    }
    if (r.rank < 0 || r.rank >= request.ranks()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "rank ", r.rank, " is out of range [0, ", request.ranks(), ")"));
    }
    if (r.rank == request.home_of(r.expert)) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, "rank ", r.rank, " is the home of expert ", r.expert, " (a replica lives on a guest rank)"));
    }
    if (!seen.insert(r).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "expert ", r.expert, " is placed on rank ", r.rank, " twice"));
    }
    if (++per_rank[r.rank] > request.slots_per_rank) {
      return absl::InvalidArgumentError(absl::StrCat(where, "rank ", r.rank,
                                                     " holds more than slots_per_rank = ",
                                                     request.slots_per_rank, " replicas"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidatePlan(const PlanRequest& request, const Plan& plan) {
  if (absl::Status s = ValidateReplicas(request, plan.replicas, "replicas"); !s.ok()) return s;
  return CheckAssignments(request, plan);
}

}  // namespace taot

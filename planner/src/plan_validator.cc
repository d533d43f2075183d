#include "taot/planner/plan_validator.h"

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace taot {
namespace {

// Runs on every plan the daemon returns, so it is a single pass with hashed lookups, and the
// messages (strings) are made only for the entry that fails.
absl::Status CheckAssignments(const PlanRequest& request, const Plan& plan) {
  absl::flat_hash_set<std::pair<int, int>> replicas;
  replicas.reserve(plan.replicas.size());
  for (const Replica& r : plan.replicas) replicas.emplace(r.expert, r.rank);
  absl::flat_hash_set<std::tuple<int, int, int>> seen;
  absl::flat_hash_map<std::pair<int, int>, int64_t> sent;  // (source, expert) -> tokens sent to guests
  seen.reserve(plan.assignments.size());
  sent.reserve(plan.assignments.size());
  for (size_t i = 0; i < plan.assignments.size(); ++i) {
    const Assignment& a = plan.assignments[i];
    auto fail = [i](auto&&... parts) {
      return absl::InvalidArgumentError(absl::StrCat("assignments[", i, "]: ", parts...));
    };
    if (a.source < 0 || a.source >= request.ranks()) {
      return fail("source ", a.source, " is out of range [0, ", request.ranks(), ")");
    }
    if (a.expert < 0 || a.expert >= request.experts()) {
      return fail("expert ", a.expert, " is out of range [0, ", request.experts(), ")");
    }
    if (a.rank < 0 || a.rank >= request.ranks()) {
      return fail("rank ", a.rank, " is out of range [0, ", request.ranks(), ")");
    }
    if (a.tokens <= 0) return fail("tokens must be > 0, got ", a.tokens);
    if (!replicas.contains(std::pair{a.expert, a.rank})) {
      return fail("rank ", a.rank, " holds no replica of expert ", a.expert);
    }
    if (!seen.emplace(a.source, a.expert, a.rank).second) {
      return fail("(source ", a.source, ", expert ", a.expert, ", rank ", a.rank, ") appears twice");
    }
    int64_t& total = sent[std::pair{a.source, a.expert}];
    total += a.tokens;
    const int64_t load = request.load.at(a.source, a.expert);
    if (total > load) {
      return fail("source ", a.source, " sends ", total, " tokens of expert ", a.expert, " to guests but routes only ",
                  load, " to it");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateReplicas(const PlanRequest& request, std::span<const Replica> replicas, std::string_view field,
                              SlotLimit limit) {
  absl::flat_hash_set<std::pair<int, int>> seen;
  seen.reserve(replicas.size());
  std::vector<int> per_rank(static_cast<size_t>(request.ranks()), 0);
  for (size_t i = 0; i < replicas.size(); ++i) {
    const Replica& r = replicas[i];
    auto fail = [&](auto&&... parts) {
      return absl::InvalidArgumentError(absl::StrCat(std::string(field), "[", i, "]: ", parts...));
    };
    if (r.expert < 0 || r.expert >= request.experts()) {
      return fail("expert ", r.expert, " is out of range [0, ", request.experts(), ")");
    }
    if (r.rank < 0 || r.rank >= request.ranks()) {
      return fail("rank ", r.rank, " is out of range [0, ", request.ranks(), ")");
    }
    if (r.rank == request.home_of(r.expert)) {
      return fail("rank ", r.rank, " is the home of expert ", r.expert, " (a replica lives on a guest rank)");
    }
    if (!seen.emplace(r.expert, r.rank).second)
      return fail("expert ", r.expert, " is placed on rank ", r.rank, " twice");
    if (++per_rank[r.rank] > request.slots_per_rank() && limit == SlotLimit::kEnforced) {
      return fail("rank ", r.rank, " holds more than slots_per_rank = ", request.slots_per_rank(), " replicas");
    }
  }
  return absl::OkStatus();
}

absl::Status ValidatePlan(const PlanRequest& request, const Plan& plan, SlotLimit limit) {
  if (absl::Status s = ValidateReplicas(request, plan.replicas, "replicas", limit); !s.ok()) return s;
  return CheckAssignments(request, plan);
}

}  // namespace taot

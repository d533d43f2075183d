#include "taot/planner/plan_validator.h"

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "canonical_order.h"
#include "group_by_key.h"
#include "plan_hasher.h"
#include "sort_presorted.h"

namespace taot {
namespace {

// Names the first entry that breaks a rule: run only on a plan the array check (AssignmentsValid,
// CanonicalEntriesValid) found invalid, one pass with hashed lookups, the message made only for
// the entry that fails.
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
    const int64_t load = request.load.at(a.source, a.expert);
    // Compared before adding: the sum of a count near the int64 limit would overflow. Both terms
    // are non-negative (total never passes load), so their unsigned sum is exact.
    if (a.tokens > load - total) {
      return fail("source ", a.source, " sends ", static_cast<uint64_t>(total) + static_cast<uint64_t>(a.tokens),
                  " tokens of expert ", a.expert, " to guests but routes only ", load, " to it");
    }
    total += a.tokens;
  }
  return absl::OkStatus();
}

// Whether `expert` is among a rank's replicas' experts [first, last), sorted. A rank holds at
// most its K slots' replicas, a few, where a scan costs a fifth of std::binary_search's
// instructions (35 an entry of an EP64 burst's plan, a sixth of the plan's check); a comparison
// planner's rank (slots lifted) may hold many.
bool Holds(const int32_t* first, const int32_t* last, int32_t expert) {
  constexpr std::ptrdiff_t kScanned = 8;
  if (last - first > kScanned) return std::binary_search(first, last, expert);
  for (; first != last; ++first) {
    if (*first == expert) return true;
  }
  return false;
}

// Whether the entries [first, last), in range and ordered by (source, expert, rank), name held
// replicas, no (source, expert, rank) twice, and send no more of a source's tokens of an expert
// than it routes to it. `held` lists each rank's replicas' experts, sorted, from held_start[rank].
// Each entry checked goes to on_entry(entry), in order.
template <typename It, typename Deref, typename OnEntry>
bool EntriesValid(const PlanRequest& request, It first, It last, const std::vector<size_t>& held_start,
                  const std::vector<int32_t>& held, Deref deref, OnEntry on_entry) {
  int64_t sent = 0;  // to guests, of the current (source, expert)
  // The load entries are read a few entries ahead: each is on a cache line of its own, and
  // waiting on them was half of this walk's time at EP256.
  constexpr std::ptrdiff_t kAhead = 8;
  for (It it = first; it != last; ++it) {
    if (last - it > kAhead) {
      const Assignment& next = deref(*(it + kAhead));
      __builtin_prefetch(&request.load.data()[static_cast<size_t>(next.source) * request.load.experts() +
                                              static_cast<size_t>(next.expert)]);
    }
    const Assignment& a = deref(*it);
    const auto rank = static_cast<size_t>(a.rank);
    if (!Holds(held.data() + held_start[rank], held.data() + held_start[rank + 1], a.expert)) return false;
    const Assignment* before = it != first ? &deref(*(it - 1)) : nullptr;
    const bool same = before != nullptr && before->source == a.source && before->expert == a.expert;
    if (same && before->rank == a.rank) return false;  // the triple twice
    const int64_t sent_before = same ? sent : 0;       // never past the load, so the test cannot overflow
    if (a.tokens > request.load.at(a.source, a.expert) - sent_before) return false;
    sent = sent_before + a.tokens;
    on_entry(a);
  }
  return true;
}

constexpr auto kNoVisit = [](const Assignment&) {};

// What CheckRanges finds.
struct Ranges {
  bool in_range = true;
  bool canonical = true;
};

// Whether every assignment's fields are in range (a negative one reads as a large unsigned one)
// with tokens > 0, and whether the entries come in canonical order, in one pass; with kFields,
// also the fields' bits, for the hash's widths.
template <bool kFields>
Ranges CheckRanges(const PlanRequest& request, const std::vector<Assignment>& assignments,
                   AssignmentFieldBits* fields = nullptr) {
  const auto R = static_cast<size_t>(request.ranks()), E = static_cast<size_t>(request.experts());
  Ranges out;
  for (size_t i = 0; i < assignments.size(); ++i) {
    const Assignment& a = assignments[i];
    if constexpr (kFields) fields->Add(a);
    const auto below = [](int32_t v, size_t bound) { return static_cast<size_t>(static_cast<uint32_t>(v)) < bound; };
    if (!(below(a.source, R) && below(a.expert, E) && below(a.rank, R) && a.tokens > 0)) return {false, false};
    // Once out of order, no more comparisons: a planner's entries come by expert, not source.
    if (out.canonical && i > 0 && a < assignments[i - 1]) out.canonical = false;
  }
  return out;
}

// Each rank's replicas' experts, sorted, rank r's from held_start[r] (the replicas are valid: no
// pair twice).
void HeldExperts(const Plan& plan, size_t ranks, std::vector<size_t>& held_start, std::vector<int32_t>& held) {
  GroupByKey(
      std::span<const Replica>(plan.replicas), ranks, [](const Replica& r) { return r.rank; },
      [](const Replica& r) { return r.expert; }, held_start, held);
  for (size_t r = 0; r < ranks; ++r) {
    std::sort(held.begin() + static_cast<std::ptrdiff_t>(held_start[r]),
              held.begin() + static_cast<std::ptrdiff_t>(held_start[r + 1]));
  }
}

// Whether the assignments of a plan with valid replicas, in range and in canonical order, keep
// the rules CheckAssignments checks: walked in place, as they come by source, expert and rank.
template <typename OnEntry>
bool CanonicalEntriesValid(const PlanRequest& request, const Plan& plan, OnEntry on_entry) {
  std::vector<size_t> held_start;
  std::vector<int32_t> held;
  HeldExperts(plan, static_cast<size_t>(request.ranks()), held_start, held);
  return EntriesValid(
      request, plan.assignments.begin(), plan.assignments.end(), held_start, held,
      [](const Assignment& a) -> const Assignment& { return a; }, on_entry);
}

// Whether every assignment keeps the rules CheckAssignments checks, on arrays rather than hashed
// sets (the replicas by rank, the entries by source: linear but for small sorts), for the valid
// plans that are nearly all a daemon sees: a burst's plan has thousands of entries, and hashing
// each was a third of RunPlanner's time on it. Says only whether; CheckAssignments says why not.
bool AssignmentsValid(const PlanRequest& request, const Plan& plan) {
  const Ranges ranges = CheckRanges<false>(request, plan.assignments);
  if (!ranges.in_range) return false;
  // A canonical plan (as Canonicalize leaves it) is walked in place.
  if (ranges.canonical) return CanonicalEntriesValid(request, plan, kNoVisit);
  // Otherwise the entries by source; each source's by (expert, rank), so that a pair twice is
  // adjacent.
  const auto R = static_cast<size_t>(request.ranks());
  std::vector<size_t> held_start;
  std::vector<int32_t> held;
  HeldExperts(plan, R, held_start, held);
  std::vector<size_t> by_start;
  std::vector<const Assignment*> by_source;
  GroupByKey(
      std::span<const Assignment>(plan.assignments), R, [](const Assignment& a) { return a.source; },
      [](const Assignment& a) { return &a; }, by_start, by_source);
  for (size_t s = 0; s < R; ++s) {
    const auto first = by_source.begin() + static_cast<std::ptrdiff_t>(by_start[s]),
               last = by_source.begin() + static_cast<std::ptrdiff_t>(by_start[s + 1]);
    SortPresorted(
        first, last, [](const Assignment* a, const Assignment* b) { return a->expert < b->expert; },
        [](const Assignment* a, const Assignment* b) {
          return std::pair{a->expert, a->rank} < std::pair{b->expert, b->rank};
        });
    if (!EntriesValid(
            request, first, last, held_start, held, [](const Assignment* a) -> const Assignment& { return *a; },
            kNoVisit)) {
      return false;
    }
  }
  return true;
}

}  // namespace

absl::Status ValidateReplicas(const PlanRequest& request, std::span<const Replica> replicas, std::string_view field,
                              SlotLimit limit) {
  // A canonical plan's replicas are sorted (and most lists are), so a pair given twice is next to
  // itself: found in one pass, without the hash set (and its allocation) an unsorted list needs.
  const bool sorted = std::is_sorted(replicas.begin(), replicas.end());
  absl::flat_hash_set<std::pair<int, int>> seen;
  if (!sorted) seen.reserve(replicas.size());
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
    if (sorted ? i > 0 && replicas[i - 1] == r : !seen.emplace(r.expert, r.rank).second)
      return fail("expert ", r.expert, " is placed on rank ", r.rank, " twice");
    if (++per_rank[r.rank] > request.slots_per_rank() && limit == SlotLimit::kEnforced) {
      return fail("rank ", r.rank, " holds more than slots_per_rank = ", request.slots_per_rank(), " replicas");
    }
  }
  return absl::OkStatus();
}

absl::Status ValidatePlan(const PlanRequest& request, const Plan& plan, SlotLimit limit) {
  if (absl::Status s = ValidateReplicas(request, plan.replicas, "replicas", limit); !s.ok()) return s;
  // A plan that passes the dense check is valid; one that does not gets CheckAssignments's error,
  // which names the first entry that breaks a rule.
  if (AssignmentsValid(request, plan)) return absl::OkStatus();
  return CheckAssignments(request, plan);
}

absl::Status CanonicalizeAndValidate(const PlanRequest& request, Plan& plan, SlotLimit limit, uint64_t* hash) {
  if (!std::is_sorted(plan.replicas.begin(), plan.replicas.end())) {
    std::sort(plan.replicas.begin(), plan.replicas.end());
  }
  AssignmentFieldBits fields;
  const Ranges ranges = hash != nullptr ? CheckRanges<true>(request, plan.assignments, &fields)
                                        : CheckRanges<false>(request, plan.assignments);
  if (!ranges.in_range || !ValidateReplicas(request, plan.replicas, "replicas", limit).ok()) {
    // The plain way, for the error it names.
    Canonicalize(plan);
    return ValidatePlan(request, plan, limit);
  }
  // In range, so every source has a place in the counting sort's table of R.
  if (!ranges.canonical) SortSourcesInRange(plan.assignments, static_cast<size_t>(request.ranks()));
  bool valid;
  if (hash != nullptr) {
    PlanHasher hasher(plan, fields);
    valid = CanonicalEntriesValid(request, plan, [&](const Assignment& a) { hasher.Add(a); });
    if (valid) *hash = hasher.hash();
  } else {
    valid = CanonicalEntriesValid(request, plan, kNoVisit);
  }
  return valid ? absl::OkStatus() : CheckAssignments(request, plan);
}

}  // namespace taot

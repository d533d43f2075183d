// A plan: which experts get a guest replica where, and how many tokens each replica computes.
#pragma once

#include <compare>
#include <cstdint>
#include <optional>
#include <vector>

namespace taot {

// A copy of expert `expert`'s weights in a guest slot of rank `rank` (never its home rank).
struct Replica {
  int32_t expert = 0;
  int32_t rank = 0;
  auto operator<=>(const Replica&) const = default;
};

// `tokens` of the tokens that source rank `source` routes to `expert` are computed on guest
// rank `rank`, which holds a replica of it. Tokens not assigned stay on the expert's home rank.
struct Assignment {
  int32_t source = 0;
  int32_t expert = 0;
  int32_t rank = 0;
  int64_t tokens = 0;
  auto operator<=>(const Assignment&) const = default;
};

struct Plan {
  std::vector<Replica> replicas;
  std::vector<Assignment> assignments;
  // Set when the planner could not meet the request's target imbalance (K too small, or the
  // load too concentrated); the plan then gets as close as it can.
  bool target_missed = false;
  // The target residual imbalance (%) the planner chose for itself, when it chooses one (`taot`
  // with target_imbalance_pct=auto); the scorecard then scores against it.
  std::optional<double> chosen_target_pct;
  bool operator==(const Plan&) const = default;
};

// Sorts replicas by (expert, rank) and assignments by (source, expert, rank), so that two
// plans with the same content compare (and serialise) equal bit for bit.
void Canonicalize(Plan& plan);

}  // namespace taot

// The fixed shape of a job's planning problem: the cluster, its experts and its guest slots.
// It is the same for every round of a job, so the daemon's job, the client and the simulator
// make it once and every round's PlanRequest shares it by pointer: the topology's R x R cost
// matrix (128 MiB at 4096 ranks) is never copied per round.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "taot/planner/topology.h"

namespace taot {

// Size limits of one problem, checked by ValidateProblem and, before they allocate, by every
// reader of outside input (docs/formats.md, "Limits"). A Topology holds a dense R x R cost
// matrix (128 MiB of doubles at 4096 ranks) and the load R x E int64 entries (128 MiB at 2^24).
inline constexpr int kMaxRanks = 4096;
inline constexpr int kMaxExperts = 65536;
inline constexpr int64_t kMaxLoadEntries = int64_t{1} << 24;

// Why a declared R x E does not fit the limits above, or OkStatus; `ranks_field` and
// `experts_field` name the input the sizes came from.
absl::Status CheckRequestSize(int64_t ranks, int64_t experts, absl::string_view ranks_field = "topology.ranks",
                              absl::string_view experts_field = "experts");

struct Problem {
  Topology topology;
  // Experts of a layer; expert e lives on home rank e / (experts / ranks).
  int experts = 0;
  // Guest slots per rank (K): at most this many replicas on any rank.
  int slots_per_rank = 0;
  // Bytes of one expert's weights (for the bytes-moved figures; 0 when unknown).
  int64_t expert_bytes = 0;

  int ranks() const { return topology.ranks(); }
  int experts_per_rank() const { return experts / ranks(); }
  int home_of(int expert) const { return expert / experts_per_rank(); }
};

// Checks every field and the size limits above; the error names the field.
absl::Status ValidateProblem(const Problem& problem);

// The problem, checked, frozen for sharing.
absl::StatusOr<std::shared_ptr<const Problem>> ShareProblem(Problem problem);

}  // namespace taot

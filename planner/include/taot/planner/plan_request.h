// The input of every planner: one layer of one microbatch.
#pragma once

#include <span>

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "taot/planner/load_matrix.h"
#include "taot/planner/plan.h"
#include "taot/planner/topology.h"

namespace taot {

// Size limits of one request, checked by ValidateRequest and, before they allocate, by every
// reader of outside input (docs/formats.md, "Limits"). A Topology holds a dense R x R cost
// matrix (128 MiB of doubles at 4096 ranks) and the load R x E int64 entries (128 MiB at 2^24).
inline constexpr int kMaxRanks = 4096;
inline constexpr int kMaxExperts = 65536;
inline constexpr int64_t kMaxLoadEntries = int64_t{1} << 24;

// Why a declared R x E does not fit the limits above, or OkStatus; `ranks_field` and
// `experts_field` name the input the sizes came from.
absl::Status CheckRequestSize(int64_t ranks, int64_t experts,
                              absl::string_view ranks_field = "topology.ranks",
                              absl::string_view experts_field = "experts");

struct PlanRequest {
  Topology topology;
  // Experts of the layer; expert e lives on home rank e / (experts / ranks).
  int experts = 0;
  // Guest slots per rank (K): at most this many replicas on any rank.
  int slots_per_rank = 0;
  // Bytes of one expert's weights (for the bytes-moved figures; 0 when unknown).
  int64_t expert_bytes = 0;
  // Residual imbalance the planner aims for, in percent; unset means the planner's default.
  std::optional<double> target_imbalance_pct;
  // load.at(s, e): tokens source rank s routes to expert e. ranks() x experts.
  LoadMatrix load;
  // Replicas already in place from an earlier microbatch of the same optimizer step: reusing
  // one moves no weights. A resident replica that a plan does not list is dropped.
  std::vector<Replica> resident;

  int ranks() const { return topology.ranks(); }
  int experts_per_rank() const { return experts / ranks(); }
  int home_of(int expert) const { return expert / experts_per_rank(); }
};

// Checks every field and every range rule; the error names the field and the bad value
// (e.g. "load[3][17]: must be >= 0, got -5").
absl::Status ValidateRequest(const PlanRequest& request);

// The first entry of a load row outside [0, kMaxTokensPerEntry], if any. Fast on good rows
// (one vectorized pass), since every request's every row goes through it.
std::optional<size_t> FirstOutOfRange(std::span<const int64_t> row);

// The default target residual imbalance of the planners that aim for one.
inline constexpr double kDefaultTargetImbalancePct = 2.0;

}  // namespace taot

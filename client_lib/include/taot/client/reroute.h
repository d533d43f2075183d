// Token reroute: where each of this rank's routed (token, expert) pairs is computed under a plan.
//
// The plan says, for this rank as a source, how many of its pairs of expert e each guest rank
// computes (Assignment.tokens); the rest stay on e's home rank. Reroute honours those counts
// exactly and deterministically: the pairs of expert e are taken in the order they appear, the
// first n1 go to the lowest guest rank, the next n2 to the next one, and so on; the rest go home.
// Every rank's pairs therefore land where the plan counted them, and a receiving rank knows what
// arrives from the all-to-all's send counts alone.
//
// RerouteTable is built on the host from the plan. Reroute is the host path; the table's view()
// feeds the data-plane kernels (taot/kernels/reroute.h: the same destinations, plus each pair's
// virtual expert id and the send order, on the CPU or on the device), whose virtual layout gives
// each rank E/R + K local experts, its guest slots numbered as taot/client/replica_moves.h does.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "taot/kernels/route_table.h"
#include "taot/planner/plan.h"

namespace taot::client {

// One source rank's share of a plan: per expert, its guests (ascending) and their counts, as
// compressed rows (guests of expert e at [offsets[e], offsets[e + 1])).
struct RerouteTable {
  int ranks = 0;
  int experts = 0;
  int slots = 0;                 // K of the virtual layout
  std::vector<int32_t> offsets;  // experts + 1
  std::vector<int32_t> guests;
  std::vector<int64_t> counts;
  std::vector<int64_t> pair_end;    // per guest: counts' running total within its expert
  std::vector<int32_t> virtual_id;  // per guest: its slot's virtual expert id

  // `rank`'s table under `plan` for R ranks, E experts and K guest slots per rank; errors name
  // the field (an assignment without its replica, a rank with more than K replicas).
  static absl::StatusOr<RerouteTable> For(const Plan& plan, int ranks, int experts, int rank, int slots);
  // The same with K the most replicas the plan puts on one rank.
  static absl::StatusOr<RerouteTable> For(const Plan& plan, int ranks, int experts, int rank);
  int home_of(int32_t expert) const { return expert / (experts / ranks); }
  // The table as the kernels read it; valid while this table lives and is unchanged.
  kernels::RouteTable view() const;
};

// Fills dest_rank[i] for each pair i (its expert expert_ids[i]) and send_counts[r], the pairs sent
// to rank r (this rank's own included). INVALID_ARGUMENT for an expert id out of range;
// FAILED_PRECONDITION when the plan gives guests more pairs of an expert than this rank routes to
// it (the plan was made from other counts). Outputs are written only on success.
absl::Status Reroute(const RerouteTable& table, std::span<const int32_t> expert_ids, std::span<int32_t> dest_rank,
                     std::span<int64_t> send_counts);

}  // namespace taot::client

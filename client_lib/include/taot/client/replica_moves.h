// Which weights move where under a plan, and where they live on each rank.
//
// Every replica (e, r) of a plan is one transfer: the home rank of e sends its weights to guest
// rank r, into one of r's guest slots. Slots are numbered per rank in ascending expert order, so
// every rank derives the same slot for every replica from the plan alone. After the backward
// pass the same transfers run in reverse for the gradients: each guest sends its slot's
// gradient to the home, which adds them to its own in ascending guest order (a fixed order, so a
// rerun gives the same sums bit for bit).
#pragma once

#include <vector>

#include "taot/planner/plan.h"

namespace taot::client {

struct ReplicaTransfer {
  int expert = 0;
  int home = 0;
  int guest = 0;
  int slot = 0;  // on the guest
  auto operator<=>(const ReplicaTransfer&) const = default;
};

// All of the plan's transfers, ordered by (expert, guest). `experts_per_rank` is E / R.
std::vector<ReplicaTransfer> Transfers(const Plan& plan, int experts_per_rank);

// The expert in each of `rank`'s guest slots (slot order), at most K of them.
std::vector<int> GuestSlots(const Plan& plan, int rank);

}  // namespace taot::client

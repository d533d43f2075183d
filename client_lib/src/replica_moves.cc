#include "taot/client/replica_moves.h"

#include <algorithm>

namespace taot::client {
namespace {

// By guest, then expert: the order that numbers the slots.
std::vector<Replica> ByGuest(const Plan& plan) {
  std::vector<Replica> replicas = plan.replicas;
  std::sort(replicas.begin(), replicas.end(), [](const Replica& a, const Replica& b) {
    return std::pair{a.rank, a.expert} < std::pair{b.rank, b.expert};
  });
  return replicas;
}

}  // namespace

std::vector<int> GuestSlots(const Plan& plan, int rank) {
  std::vector<int> slots;
  for (const Replica& r : ByGuest(plan)) {
    if (r.rank == rank) slots.push_back(r.expert);
  }
  return slots;
}

std::vector<ReplicaTransfer> Transfers(const Plan& plan, int experts_per_rank) {
  const std::vector<Replica> replicas = ByGuest(plan);
  std::vector<ReplicaTransfer> out;
  int slot = 0;
  for (size_t i = 0; i < replicas.size(); ++i) {
    slot = i > 0 && replicas[i - 1].rank == replicas[i].rank ? slot + 1 : 0;
    out.push_back({replicas[i].expert, replicas[i].expert / experts_per_rank, replicas[i].rank, slot});
  }
  std::sort(out.begin(), out.end());  // by expert (and so home), then guest
  return out;
}

}  // namespace taot::client

#include "taot/client/reroute.h"

#include <algorithm>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "taot/client/replica_moves.h"

namespace taot::client {

absl::StatusOr<RerouteTable> RerouteTable::For(const Plan& plan, int ranks, int experts, int rank) {
  std::map<int, int> on_rank;
  int slots = 0;
  for (const Replica& r : plan.replicas) slots = std::max(slots, ++on_rank[r.rank]);
  return For(plan, ranks, experts, rank, slots);
}

absl::StatusOr<RerouteTable> RerouteTable::For(const Plan& plan, int ranks, int experts, int rank, int slots) {
  if (slots < 0) return absl::InvalidArgumentError(absl::StrCat("slots: must be >= 0, got ", slots));
  if (ranks <= 0) return absl::InvalidArgumentError(absl::StrCat("ranks: must be >= 1, got ", ranks));
  if (experts <= 0 || experts % ranks != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("experts: must be a positive multiple of ranks (", ranks, "), got ", experts));
  }
  if (rank < 0 || rank >= ranks) {
    return absl::InvalidArgumentError(absl::StrCat("rank: must be in [0, ", ranks, "), got ", rank));
  }
  std::vector<Assignment> mine;
  for (size_t i = 0; i < plan.assignments.size(); ++i) {
    const Assignment& a = plan.assignments[i];
    if (a.source != rank) continue;
    if (a.expert < 0 || a.expert >= experts || a.rank < 0 || a.rank >= ranks || a.tokens <= 0) {
      return absl::InvalidArgumentError(absl::StrCat("plan.assignments[", i, "]: (expert ", a.expert, ", rank ", a.rank,
                                                     ", tokens ", a.tokens, ") is out of range for ", ranks,
                                                     " ranks and ", experts, " experts"));
    }
    mine.push_back(a);
  }
  std::sort(mine.begin(), mine.end());  // by expert, then guest rank
  RerouteTable table;
  table.ranks = ranks;
  table.experts = experts;
  table.slots = slots;
  table.offsets.assign(static_cast<size_t>(experts) + 1, 0);
  for (const Assignment& a : mine) ++table.offsets[a.expert + 1];
  for (int e = 0; e < experts; ++e) table.offsets[e + 1] += table.offsets[e];
  const int per_rank = experts / ranks;
  const int local = per_rank + slots;
  // Every replica's slot, numbered once for the whole plan: sorted by (expert, home, guest).
  const std::vector<ReplicaTransfer> transfers = Transfers(plan, per_rank);
  std::vector<int> held(static_cast<size_t>(ranks), 0);  // replicas per guest rank
  for (const ReplicaTransfer& t : transfers) {
    if (t.guest >= 0 && t.guest < ranks) held[t.guest] = std::max(held[t.guest], t.slot + 1);
  }
  int64_t run = 0;
  for (size_t i = 0; i < mine.size(); ++i) {
    const Assignment& a = mine[i];
    const ReplicaTransfer key{a.expert, a.expert / per_rank, a.rank, 0};
    const auto slot = std::lower_bound(transfers.begin(), transfers.end(), key);
    if (slot == transfers.end() || slot->expert != a.expert || slot->guest != a.rank) {
      return absl::InvalidArgumentError(absl::StrCat("plan.assignments: rank ", rank, " sends expert ", a.expert,
                                                     " to rank ", a.rank, ", which holds no replica of it"));
    }
    if (held[a.rank] > slots) {
      return absl::InvalidArgumentError(absl::StrCat("plan.replicas: rank ", a.rank, " holds ", held[a.rank],
                                                     " replicas, more than the ", slots, " slots per rank"));
    }
    run = i > 0 && mine[i - 1].expert == a.expert ? run + a.tokens : a.tokens;
    table.guests.push_back(a.rank);
    table.counts.push_back(a.tokens);
    table.pair_end.push_back(run);
    table.virtual_id.push_back(a.rank * local + per_rank + slot->slot);
  }
  return table;
}

kernels::RouteTable RerouteTable::view() const {
  kernels::RouteTable t;
  t.ranks = ranks;
  t.experts = experts;
  t.slots = slots;
  t.guest_begin = offsets.data();
  t.guest_rank = guests.data();
  t.pair_end = pair_end.data();
  t.virtual_id = virtual_id.data();
  return t;
}

absl::Status Reroute(const RerouteTable& table, std::span<const int32_t> expert_ids, std::span<int32_t> dest_rank,
                     std::span<int64_t> send_counts) {
  if (dest_rank.size() != expert_ids.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("dest_rank: must have one entry per pair (", expert_ids.size(), "), got ", dest_rank.size()));
  }
  if (static_cast<int>(send_counts.size()) != table.ranks) {
    return absl::InvalidArgumentError(
        absl::StrCat("send_counts: must have one entry per rank (", table.ranks, "), got ", send_counts.size()));
  }
  // Pairs per expert first: checks the ids and that the plan's counts fit, before any output.
  std::vector<int64_t> routed(static_cast<size_t>(table.experts), 0);
  for (size_t i = 0; i < expert_ids.size(); ++i) {
    const int32_t e = expert_ids[i];
    if (e < 0 || e >= table.experts) {
      return absl::InvalidArgumentError(
          absl::StrCat("expert_ids[", i, "]: must be in [0, ", table.experts, "), got ", e));
    }
    ++routed[e];
  }
  for (int e = 0; e < table.experts; ++e) {
    int64_t assigned = 0;
    for (int32_t j = table.offsets[e]; j < table.offsets[e + 1]; ++j) assigned += table.counts[j];
    if (assigned > routed[e]) {
      return absl::FailedPreconditionError(absl::StrCat("the plan sends ", assigned, " pairs of expert ", e,
                                                        " from this rank to guests, but this rank routes only ",
                                                        routed[e], " to it (a plan made for other counts)"));
    }
  }
  // Per expert: which of its guests is being filled, and how much of it is left.
  std::vector<int32_t> next(table.offsets.begin(), table.offsets.end() - 1);
  std::vector<int64_t> left(static_cast<size_t>(table.experts), 0);
  for (int e = 0; e < table.experts; ++e) {
    if (next[e] < table.offsets[e + 1]) left[e] = table.counts[next[e]];
  }
  std::fill(send_counts.begin(), send_counts.end(), 0);
  for (size_t i = 0; i < expert_ids.size(); ++i) {
    const int32_t e = expert_ids[i];
    int32_t to = table.home_of(e);
    if (next[e] < table.offsets[e + 1]) {
      to = table.guests[next[e]];
      if (--left[e] == 0 && ++next[e] < table.offsets[e + 1]) left[e] = table.counts[next[e]];
    }
    dest_rank[i] = to;
    ++send_counts[to];
  }
  return absl::OkStatus();
}

}  // namespace taot::client

// ECHO as its code does it: NVIDIA/Megatron-LM pull request 2368 (head
// a2b16b8733bb4ced46880d6adee6f19124732991), megatron/core/transformer/moe/offloading_planner.py,
// the `one_shot_greedy` choice of `gen_offloading_plan` with threshold_multiplier = 0 (its
// default: `reclaim_spare_experts` never runs) and dtype int32:
//  1. `gen_intermediate`: the floored mean is every rank's capacity; a rank's experts, smallest
//     first, fill it, and what lies above it is the spill of the experts it falls in. A rank
//     below the mean has that much spare room.
//  2. `gen_assignment` / `one_shot_greedy_assignment`: the spills, largest first, are laid end to
//     end against the spare rooms, largest first, and each overlap is a chunk of an expert for a
//     rank (next fit: ranks fill one after another, a spill may run over several). `torch.topk`
//     keeps the K largest chunks of each rank, one slot each; the rest of those spills stays
//     home, so one rank never holds more than K replicas.
//  3. `breadth_first_allocation`: each slot first takes floor(share x capacity) from every
//     source, its share being the source's part of the expert's tokens (in float32, as torch).
//  4. `depth_first_allocation`: the rest of each slot's capacity is filled from what the
//     sources still route to the expert, sources laid in rank order against the expert's slots
//     in slot order (rank, then slot).
// Topology-agnostic: the node layout is never read. ECHO has no target imbalance and no
// resident replicas; both are ignored.
//
// Where C++ must differ from the torch code:
//  - Ties: torch.sort and torch.topk do not promise an order for equal values; we break every
//    tie by the lower index (expert, rank, chunk), so the plan is the same on every machine.
//    Only equal positive spills, rooms or chunks can change the plan.
//  - Integers: counts are int64 where the code's int32 would overflow; below 2^31 they agree.
//  - Floats: the breadth-first share is computed in float32 in the code's operation order, so it
//    is the code's bit for bit while an expert's total stays below 2^24 (float32 is exact on the
//    counts and their sum there). Beyond that a share is capped at the source's load and a slot's
//    remainder at zero, so plans stay valid; the depth-first pass runs in exact integers.
//  - K larger than the experts on a rank is an error for torch.topk; we keep what there is.
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <span>

#include "planners/builtin.h"
#include "planners/params.h"
#include "planners/plan_building.h"
#include "planners/summing_planner.h"

namespace taot::planners {
namespace {

// Lays `first` and `second` end to end from 0 and calls on_overlap(i, j, amount) for each
// positive overlap of first[i] with second[j], in order (one_shot_greedy_assignment's overlap
// matrix, walked without building it).
template <typename OnOverlap>
void ForEachOverlap(std::span<const int64_t> first, std::span<const int64_t> second, OnOverlap on_overlap) {
  size_t i = 0;
  size_t j = 0;
  int64_t first_end = first.empty() ? 0 : first[0];
  int64_t second_end = second.empty() ? 0 : second[0];
  int64_t at = 0;
  while (i < first.size() && j < second.size()) {
    const int64_t end = std::min(first_end, second_end);
    if (end > at) on_overlap(i, j, end - at);
    at = std::max(at, end);
    if (first_end == end && ++i < first.size()) first_end += first[i];
    if (second_end == end && ++j < second.size()) second_end += second[j];
  }
}

// Indices 0..n-1 ordered by their keys under `before` (std::greater: decreasing), ties to the
// lower index.
template <typename Before>
std::vector<int> OrderBy(std::span<const int64_t> key, Before before) {
  std::vector<int> order(key.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return before(key[a], key[b]); });
  return order;
}

// gen_intermediate: each expert's spill above the floored mean, and each rank's spare room.
struct SpillAndRoom {
  std::vector<int64_t> spill;  // per expert
  std::vector<int64_t> room;   // per rank
};

SpillAndRoom SpillsAboveTheMean(const PlanRequest& request, const LoadSums& sums) {
  const int R = request.ranks();
  const int per_rank = request.experts_per_rank();
  const int64_t mean = sums.total / R;
  SpillAndRoom out{std::vector<int64_t>(sums.expert_totals.size(), 0), std::vector<int64_t>(static_cast<size_t>(R))};
  for (int r = 0; r < R; ++r) {
    out.room[r] = std::max<int64_t>(0, mean - sums.rank_loads[r]);
    const auto local = std::span(sums.expert_totals).subspan(static_cast<size_t>(r) * per_rank, per_rank);
    int64_t filled = 0;
    for (int k : OrderBy(local, std::less<>())) {
      const int64_t before = std::max<int64_t>(0, filled - mean);
      filled += local[k];
      out.spill[r * per_rank + k] = std::max<int64_t>(0, filled - mean) - before;
    }
  }
  return out;
}

// One guest slot: `expert` on `rank`, to compute `capacity` tokens.
struct Slot {
  int expert = 0;
  int rank = 0;
  int64_t capacity = 0;
};

// gen_assignment: sorted spills against sorted rooms; each rank keeps its K largest chunks.
// Slots come in the code's slot order (rank, then chunk size).
std::vector<Slot> MatchSpillsToRooms(const PlanRequest& request, const SpillAndRoom& sr) {
  const std::vector<int> experts = OrderBy(sr.spill, std::greater<>());
  const std::vector<int> ranks = OrderBy(sr.room, std::greater<>());
  std::vector<int64_t> spills(experts.size());
  std::vector<int64_t> rooms(ranks.size());
  for (size_t i = 0; i < experts.size(); ++i) spills[i] = sr.spill[experts[i]];
  for (size_t j = 0; j < ranks.size(); ++j) rooms[j] = sr.room[ranks[j]];
  std::vector<std::vector<Slot>> chunks_of_rank(ranks.size());
  ForEachOverlap(spills, rooms, [&](size_t i, size_t j, int64_t amount) {
    chunks_of_rank[ranks[j]].push_back({experts[i], ranks[j], amount});
  });
  std::vector<Slot> slots;
  const auto K = static_cast<size_t>(request.slots_per_rank());
  for (std::vector<Slot>& chunks : chunks_of_rank) {
    // torch.topk(k=K) over the rank's column: the largest first, ties to the earlier chunk.
    std::stable_sort(chunks.begin(), chunks.end(),
                     [](const Slot& a, const Slot& b) { return a.capacity > b.capacity; });
    chunks.resize(std::min(chunks.size(), K));
    slots.insert(slots.end(), chunks.begin(), chunks.end());
  }
  return slots;
}

// breadth_first_allocation for one slot: floor(float32(load / total) x capacity) per source,
// the code's float32 operations in its order.
std::vector<int64_t> ProportionalFloors(const PlanRequest& request, int64_t expert_total, const Slot& slot) {
  std::vector<int64_t> floors(static_cast<size_t>(request.ranks()), 0);
  const auto denominator = static_cast<float>(expert_total);
  const auto capacity = static_cast<float>(slot.capacity);
  for (int s = 0; s < request.ranks(); ++s) {
    const int64_t load = request.load.at(s, slot.expert);
    const float share = static_cast<float>(load) / denominator;
    floors[s] = std::min(load, static_cast<int64_t>(std::floor(share * capacity)));
  }
  return floors;
}

// Both passes for the slots of one expert (in slot order), appended to the plan.
void AllocateExpert(const PlanRequest& request, int64_t expert_total, std::span<const Slot> slots, Plan& plan) {
  const int R = request.ranks();
  const int expert = slots.front().expert;
  std::vector<int64_t> left(static_cast<size_t>(R));
  for (int s = 0; s < R; ++s) left[s] = request.load.at(s, expert);
  std::vector<std::vector<int64_t>> flow;
  std::vector<int64_t> unfilled;
  for (const Slot& slot : slots) {
    std::vector<int64_t> floors = ProportionalFloors(request, expert_total, slot);
    int64_t taken = 0;
    for (int s = 0; s < R; ++s) {
      left[s] -= floors[s];
      taken += floors[s];
    }
    unfilled.push_back(std::max<int64_t>(0, slot.capacity - taken));
    flow.push_back(std::move(floors));
  }
  // depth_first_allocation: what the sources still route, in rank order, against what the
  // slots still lack, in slot order.
  ForEachOverlap(left, unfilled, [&](size_t source, size_t k, int64_t amount) { flow[k][source] += amount; });
  for (size_t k = 0; k < slots.size(); ++k) {
    plan.replicas.push_back({expert, slots[k].rank});
    for (int s = 0; s < R; ++s) {
      if (flow[k][s] > 0) plan.assignments.push_back({s, expert, slots[k].rank, flow[k][s]});
    }
  }
}

class EchoPlanner final : public SummingPlanner {
 public:
  std::string_view name() const override { return "echo"; }

 private:
  absl::StatusOr<Plan> PlanFromSums(const PlanRequest& request, const LoadSums& sums) override;
};

absl::StatusOr<Plan> EchoPlanner::PlanFromSums(const PlanRequest& request, const LoadSums& sums) {
  std::vector<Slot> slots = MatchSpillsToRooms(request, SpillsAboveTheMean(request, sums));
  // Group each expert's slots, keeping the slot order among them (the depth-first order).
  std::stable_sort(slots.begin(), slots.end(), [](const Slot& a, const Slot& b) { return a.expert < b.expert; });
  Plan plan;
  for (size_t begin = 0; begin < slots.size();) {
    size_t end = begin;
    while (end < slots.size() && slots[end].expert == slots[begin].expert) ++end;
    AllocateExpert(request, sums.expert_totals[slots[begin].expert], std::span(slots).subspan(begin, end - begin),
                   plan);
    begin = end;
  }
  return plan;
}

}  // namespace

PlannerOr MakeEcho(const PlannerParams& params) {
  ParamReader reader("echo", params);
  if (absl::Status s = reader.Finish(); !s.ok()) return s;
  return std::make_unique<EchoPlanner>();
}

}  // namespace taot::planners

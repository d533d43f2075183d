// Small request builders shared by the unit tests.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <random>
#include <vector>

#include "taot/planner/plan_request.h"

namespace taot::testing {

// A request on a uniform topology (ranks_per_node, λ) with the given load rows.
inline PlanRequest MakeRequest(int ranks, int experts, int slots, const std::vector<std::vector<int64_t>>& rows,
                               int ranks_per_node = 8, double lambda = 3.0) {
  PlanRequest r = EmptyRequest(std::make_shared<const Problem>(
      Problem{*Topology::Uniform(ranks, ranks_per_node, lambda), experts, slots, 1000}));
  for (int s = 0; s < ranks && s < static_cast<int>(rows.size()); ++s) {
    for (int e = 0; e < experts && e < static_cast<int>(rows[s].size()); ++e) r.load.at(s, e) = rows[s][e];
  }
  return r;
}

// `request` on a copy of its problem changed by `edit` (a shared problem is never changed).
template <typename Edit>
PlanRequest Reshaped(PlanRequest request, Edit edit) {
  Problem problem = *request.problem;
  edit(problem);
  request.problem = std::make_shared<const Problem>(std::move(problem));
  return request;
}

// Random skewed load: a few hot experts, the rest light; deterministic in `seed`.
inline PlanRequest RandomRequest(int ranks, int experts, int slots, uint64_t seed, int ranks_per_node = 8) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(ranks),
                                         std::vector<int64_t>(static_cast<size_t>(experts)));
  std::vector<int64_t> weight(static_cast<size_t>(experts));
  for (auto& w : weight) w = 1 + static_cast<int64_t>(rng() % 4);
  for (int i = 0; i < 1 + experts / 16; ++i) weight[rng() % experts] *= 8;
  for (auto& row : rows) {
    for (int e = 0; e < experts; ++e) row[e] = weight[e] * static_cast<int64_t>(20 + rng() % 30);
  }
  return MakeRequest(ranks, experts, slots, rows, ranks_per_node);
}

}  // namespace taot::testing

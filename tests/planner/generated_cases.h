// Requests of the simulator's workload families, for the tests linked with the simulator.
#pragma once

#include <cstdint>

#include "taot/planner/plan_request.h"
#include "taot/sim/case_generator.h"

namespace taot::testing {

// A case of the simulator's workload families (taot gen): zipf-like at `imbalance` (a fraction)
// where it is over 0, else `hot_experts` experts `hot_factor` times hotter (none: near uniform).
inline PlanRequest Generated(int ranks, int experts, double imbalance, int hot_experts, double hot_factor,
                             uint64_t seed, int slots = 2) {
  sim::CaseOptions o;
  o.ranks = ranks;
  o.experts = experts;
  o.slots_per_rank = slots;
  o.seed = seed;
  o.hot_experts = hot_experts;
  o.hot_factor = hot_factor;
  if (imbalance > 0) o.imbalance = imbalance;
  return sim::GenerateCase(o).value().request;
}

}  // namespace taot::testing

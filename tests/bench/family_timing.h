// What the latency benchmarks over workload families share: the family's case and a median of
// repeated timings (planner_families, first_plan).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <utility>
#include <vector>

#include "taot/planner/plan_request.h"
#include "taot/sim/case_generator.h"
#include "taot/sim/workload_families.h"

namespace taot::bench {

inline double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

using Clock = std::chrono::steady_clock;
inline double MicrosSince(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// The family's case for `seed`: `taot gen`'s generator, 8 ranks per node, 4,096 tokens x top-8
// per rank. Exits on an error.
inline PlanRequest FamilyCase(const sim::WorkloadFamily& family, int ranks, int experts, int slots, uint64_t seed) {
  sim::CaseOptions o;
  o.ranks = ranks;
  o.experts = experts;
  o.slots_per_rank = slots;
  o.seed = seed;
  family.apply(o);
  absl::StatusOr<sim::GeneratedCase> generated = sim::GenerateCase(o);
  if (!generated.ok()) {
    std::cerr << family.name << ": " << generated.status().message() << "\n";
    std::exit(1);
  }
  return std::move(generated->request);
}

// Median microseconds of `plan_once` over about budget_ms of calls (at least 3, at most 2,000).
inline double MedianOver(double budget_ms, const std::function<void()>& plan_once) {
  std::vector<double> times;
  const Clock::time_point start = Clock::now();
  while (times.size() < 3 || (MicrosSince(start) < budget_ms * 1000 && times.size() < 2000)) {
    const Clock::time_point t = Clock::now();
    plan_once();
    times.push_back(MicrosSince(t));
  }
  return Median(times);
}

}  // namespace taot::bench

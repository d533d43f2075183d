// PlanHash over the workload families against the value-by-value hash it replaced (a benchmark,
// not a test; docs/performance.md, "The plan's hash"). For each planner's canonical plan of each
// family: both hashes' median time, alternating call by call so that the machine's noise falls on
// both, their ratio, and whether they agree (they must: the same FNV-1a, so any disagreement
// exits 1).
//   build/tests/bench/plan_hash_families [--ranks 16,64,256] [--planners taot,echo] [--calls 41]
//   (a markdown table on stdout)
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "bench_cli.h"
#include "family_timing.h"
#include "taot/planner/fnv1a.h"
#include "taot/planner/plan_hash.h"
#include "taot/planner/registry.h"
#include "taot/sim/workload_families.h"
#include "taot/tools/parse_or_exit.h"

namespace {

using taot::bench::Clock;
using taot::bench::FamilyCase;
using taot::bench::Median;
using taot::bench::MicrosSince;

// The hash as PlanHash computed it before d9ba8c2: Fnv1a::AddInt64 value by value, whose loop
// runs as many times as each value has bytes.
__attribute__((noinline)) uint64_t ValueByValueHash(const taot::Plan& plan) {
  taot::Fnv1a h;
  h.AddInt64(static_cast<int64_t>(plan.replicas.size()));
  for (const taot::Replica& r : plan.replicas) {
    h.AddInt64(r.expert);
    h.AddInt64(r.rank);
  }
  h.AddInt64(static_cast<int64_t>(plan.assignments.size()));
  for (const taot::Assignment& a : plan.assignments) {
    h.AddInt64(a.source);
    h.AddInt64(a.expert);
    h.AddInt64(a.rank);
    h.AddInt64(a.tokens);
  }
  return h.hash();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> ranks_list = {16, 64, 256};
  std::vector<std::string> planners = {"taot", "echo"};
  int calls = 41;
  CLI::App app("plan_hash_families: the value-by-value plan hash against PlanHash, per family (docs/performance.md)");
  app.add_option("--ranks", ranks_list, "EP sizes (default 16,64,256)")->delimiter(',')->check(CLI::Range(1, 4096));
  app.add_option("--planners", planners, "Planners (default taot,echo)")
      ->delimiter(',')
      ->check(taot::bench::BuiltInPlanner());
  app.add_option("--calls", calls, "Calls of each hash per family (default 41)")->check(CLI::Range(1, 1000000));
  if (const std::optional<int> code = taot::cli::ParseOrExit(app, argc, argv, "plan_hash_families")) return *code;
  std::printf(
      "| planner | EP / E | entries: median (most) | value by value: median us | PlanHash: median us | "
      "ratio: median | worst (family) |\n|---|---|---|---|---|---|---|\n");
  for (const std::string& name : planners) {
    for (int ranks : ranks_list) {
      std::vector<double> entries, before_us, after_us, ratios;
      std::string worst_family;
      double worst_ratio = 0;
      for (const taot::sim::WorkloadFamily& family : taot::sim::WorkloadFamilies(ranks)) {
        const taot::PlanRequest request = FamilyCase(family, ranks, 4 * ranks, 2, 1);
        taot::Plan plan = taot::PlannerRegistry::BuiltIn().Create(name).value()->MakePlan(request).value();
        taot::Canonicalize(plan);
        if (ValueByValueHash(plan) != taot::PlanHash(plan)) {
          std::cerr << "plan_hash_families: " << name << " EP" << ranks << " " << family.name
                    << ": PlanHash differs from the value-by-value hash\n";
          return 1;
        }
        std::vector<double> before, after;
        volatile uint64_t sink = 0;
        for (int c = 0; c < calls; ++c) {
          Clock::time_point start = Clock::now();
          sink = sink + ValueByValueHash(plan);
          before.push_back(MicrosSince(start));
          start = Clock::now();
          sink = sink + taot::PlanHash(plan);
          after.push_back(MicrosSince(start));
        }
        const double ratio = Median(after) / Median(before);
        std::fprintf(stderr, "  %s EP%d %-12s %6zu entries  value by value %8.2f us  PlanHash %8.2f us  %.2f\n",
                     name.c_str(), ranks, family.name.c_str(), plan.assignments.size(), Median(before), Median(after),
                     ratio);
        entries.push_back(static_cast<double>(plan.assignments.size()));
        before_us.push_back(Median(before));
        after_us.push_back(Median(after));
        ratios.push_back(ratio);
        if (ratio > worst_ratio) {
          worst_ratio = ratio;
          worst_family = family.name;
        }
      }
      std::printf("| %s | EP%d / E%d | %.0f (%.0f) | %.2f | %.2f | %.2f | %.2f (%s) |\n", name.c_str(), ranks,
                  4 * ranks, Median(entries), *std::max_element(entries.begin(), entries.end()), Median(before_us),
                  Median(after_us), Median(ratios), worst_ratio, worst_family.c_str());
    }
  }
  return 0;
}

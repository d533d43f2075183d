// A microbatch's rounds planned as the daemon plans a batch (PlannerSlot::PlanBatch: validated,
// planned, checked and scored), on 1 and on N threads (--planning-threads), the same run: what
// spreading a batch buys where the daemon has the cores (a benchmark, not a test).
//   build/tests/bench/batch_planning_bench [--ranks 64,256] [--threads 1,2] [--planner taot]
// A batch is 48 layers: the 12 workload families (taot/sim/workload_families.h) with 4 seeds,
// E = 4R, K = 2; the median of 15 batches.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "bench_cli.h"
#include "taot/server/plan_rounds.h"
#include "taot/server/planner_slots.h"
#include "taot/sim/case_generator.h"
#include "taot/sim/workload_families.h"
#include "taot/tools/parse_or_exit.h"

namespace {

int Fail(const std::string& why) {
  std::cerr << "batch_planning_bench: " << why << "\n";
  return 1;
}

std::vector<taot::PlanRequest> Batch(int ranks) {
  std::vector<taot::PlanRequest> layers;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    for (const taot::sim::WorkloadFamily& family : taot::sim::WorkloadFamilies(ranks)) {
      taot::sim::CaseOptions o;
      o.ranks = ranks;
      o.experts = 4 * ranks;
      o.seed = seed;
      family.apply(o);
      layers.push_back(taot::sim::GenerateCase(o).value().request);
    }
  }
  return layers;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> ranks_list = {64, 256}, threads_list = {1, 2};
  std::string planner = "taot";
  CLI::App app("batch_planning_bench: a microbatch's rounds planned as the daemon plans a batch, on 1 and N threads");
  app.add_option("--ranks", ranks_list, "EP sizes (default 64,256)")->delimiter(',')->check(CLI::Range(1, 4096));
  app.add_option("--threads", threads_list, "Planning threads (default 1,2)")
      ->delimiter(',')
      ->check(CLI::Range(1, taot::server::kMaxPlanningThreads));
  app.add_option("--planner", planner, "Planner (default taot)")->check(taot::bench::BuiltInPlanner());
  if (const std::optional<int> code = taot::cli::ParseOrExit(app, argc, argv, "batch_planning_bench")) return *code;
  std::printf("| planner | EP / E | layers | threads | batch ms (median) | speed-up |\n|---|---|---|---|---|---|\n");
  for (int ranks : ranks_list) {
    const std::vector<taot::PlanRequest> layers = Batch(ranks);
    std::vector<const taot::PlanRequest*> batch;
    for (const taot::PlanRequest& r : layers) batch.push_back(&r);
    double first_ms = 0;
    for (int threads : threads_list) {
      taot::server::PlannerSlots slots(taot::PlannerRegistry::BuiltIn(), nullptr, threads);
      if (absl::Status s = slots.Set(planner, {}); !s.ok()) return Fail(std::string(s.message()));
      std::vector<double> ms;
      for (int i = 0; i < 15; ++i) {
        const auto start = std::chrono::steady_clock::now();
        for (const auto& plan : slots.current()->PlanBatch(batch, absl::InfiniteFuture())) {
          if (!plan.ok()) return Fail(std::string(plan.status().message()));
        }
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
      }
      std::nth_element(ms.begin(), ms.begin() + static_cast<std::ptrdiff_t>(ms.size() / 2), ms.end());
      const double median = ms[ms.size() / 2];
      if (first_ms == 0) first_ms = median;
      std::printf("| %s | EP%d / E%d | %zu | %d | %.2f | %.2fx |\n", planner.c_str(), ranks, 4 * ranks, batch.size(),
                  threads, median, first_ms / median);
      std::fflush(stdout);
    }
  }
  return 0;
}

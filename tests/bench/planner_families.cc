// Plan latency over families of workloads, so that no family hides behind another (a benchmark,
// not a test): for each planner, EP size, experts per rank (E = 4R unless --experts-per-rank says
// otherwise: E = R is DeepSeek-V3 at EP256, Qwen3-30B-A3B at EP128) and K, every family's warm
// and cold latency, and the median and the worst family side by side (docs/performance.md,
// "Planning latency by family").
//   build/tests/bench/planner_families [--ranks 16,64,256] [--slots 2] [--planners taot,echo]
//                                      [--budget-ms 200] [--resident off,on] [--experts-per-rank 4]
//   (a markdown table on stdout, progress on stderr)
// Families: taot/sim/workload_families.h (zipf-like at 10-90%, bursts of 1, 3 and R/8 experts,
// uniform). Cases are `taot gen`'s generator, seed 1, 8 ranks per node, 4,096 tokens x top-8 per
// rank. With --resident on, each case is planned with resident replicas, as every microbatch of
// a step but the first is in training: those the same planner's plan of the family's seed-2 case
// leaves (rows marked "+ resident").
// warm: one planner instance planning the same case again and again (its scratch reused), the
// median plan; cold: a new instance's first plan, the median over fresh instances (cold / warm:
// the family where a first plan costs most against a later one). Both run for about --budget-ms
// each (at least 3 plans). stage: the warm instance inside CheckedPlan, what a trainer's local
// planning runs on the critical path (the request checked, the plan made canonical, checked and
// hashed, the hash in the check's walk). split: what the predictive mode runs at the layer
// instead of a plan, a kept ReplicaSplitter over the replicas of the planner's plan of the case.
// One core; compare planners within one run.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench_cli.h"
#include "family_timing.h"
#include "taot/planner/registry.h"
#include "taot/planner/run_planner.h"
#include "taot/planner/split_over_replicas.h"
#include "taot/sim/workload_families.h"
#include "taot/tools/parse_or_exit.h"

namespace {

using taot::bench::FamilyCase;
using taot::bench::Median;
using taot::bench::MedianOver;

struct Row {
  std::string family;
  double warm_us, cold_us, stage_us, split_us;
};

// One table row: `name`'s warm and cold latency on every family of EP`ranks` with E `experts`
// (each family's on stderr), resident replicas or not. False on an error, said on stderr.
bool PrintFamilies(const std::string& name, int ranks, int experts, int slots, bool resident, double budget_ms) {
  std::vector<Row> rows;
  for (const taot::sim::WorkloadFamily& family : taot::sim::WorkloadFamilies(ranks)) {
    taot::PlanRequest request = FamilyCase(family, ranks, experts, slots, 1);
    std::unique_ptr<taot::Planner> warm = taot::PlannerRegistry::BuiltIn().Create(name).value();
    if (resident) {
      absl::StatusOr<taot::Plan> previous = warm->MakePlan(FamilyCase(family, ranks, experts, slots, 2));
      if (!previous.ok()) {
        std::cerr << "planner_families: " << family.name << ": " << previous.status().message() << "\n";
        return false;
      }
      request.resident = previous->replicas;
    }
    const absl::StatusOr<taot::Plan> plan = warm->MakePlan(request);  // the first plan sizes its scratch
    if (!plan.ok()) {
      std::cerr << "planner_families: " << family.name << ": " << plan.status().message() << "\n";
      return false;
    }
    const double warm_us = MedianOver(budget_ms, [&] { (void)warm->MakePlan(request); });
    const double cold_us = MedianOver(budget_ms, [&] {
      std::unique_ptr<taot::Planner> fresh = taot::PlannerRegistry::BuiltIn().Create(name).value();
      (void)fresh->MakePlan(request);
    });
    uint64_t hash = 0;
    const double stage_us = MedianOver(budget_ms, [&] { (void)taot::CheckedPlan(*warm, request, &hash); });
    taot::ReplicaSplitter splitter;
    const double split_us = MedianOver(budget_ms, [&] { (void)splitter.Split(request, plan->replicas); });
    rows.push_back({family.name, warm_us, cold_us, stage_us, split_us});
    std::fprintf(stderr, "  %s EP%d E%d K%d %-12s%s warm %9.1f us  cold %9.1f us  stage %9.1f us  split %9.1f us\n",
                 name.c_str(), ranks, experts, slots, family.name.c_str(), resident ? " + resident" : "", warm_us,
                 cold_us, stage_us, split_us);
  }
  std::vector<double> warm, cold, stage, split;
  for (const Row& r : rows) {
    warm.push_back(r.warm_us);
    cold.push_back(r.cold_us);
    stage.push_back(r.stage_us);
    split.push_back(r.split_us);
  }
  const Row& worst_warm =
      *std::max_element(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.warm_us < b.warm_us; });
  const Row& worst_cold =
      *std::max_element(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.cold_us < b.cold_us; });
  const Row& worst_stage =
      *std::max_element(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.stage_us < b.stage_us; });
  const Row& worst_ratio = *std::max_element(
      rows.begin(), rows.end(), [](auto& a, auto& b) { return a.cold_us / a.warm_us < b.cold_us / b.warm_us; });
  const Row& worst_split =
      *std::max_element(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.split_us < b.split_us; });
  std::printf(
      "| %s | EP%d / E%d%s | %d | %.0f | %.0f (%s) | %.0f | %.0f (%s) | %.2f (%s) | %.0f | %.0f (%s) | %.0f | %.0f "
      "(%s) "
      "|\n",
      name.c_str(), ranks, experts, resident ? " + resident" : "", slots, Median(warm), worst_warm.warm_us,
      worst_warm.family.c_str(), Median(cold), worst_cold.cold_us, worst_cold.family.c_str(),
      worst_ratio.cold_us / worst_ratio.warm_us, worst_ratio.family.c_str(), Median(stage), worst_stage.stage_us,
      worst_stage.family.c_str(), Median(split), worst_split.split_us, worst_split.family.c_str());
  std::fflush(stdout);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> ranks_list = {16, 64, 256};
  std::vector<int> slots_list = {2};
  std::vector<int> per_rank_list = {4};
  std::vector<std::string> planners = {"taot", "echo"};
  double budget_ms = 200;
  std::vector<std::string> residents = {"off"};
  CLI::App app("planner_families: plan latency over the workload families (docs/performance.md)");
  app.add_option("--ranks", ranks_list, "EP sizes (default 16,64,256)")->delimiter(',')->check(CLI::Range(1, 4096));
  app.add_option("--slots", slots_list, "K, guest slots per rank (default 2)")
      ->delimiter(',')
      ->check(CLI::NonNegativeNumber);
  app.add_option("--experts-per-rank", per_rank_list, "E / R (default 4)")->delimiter(',')->check(CLI::Range(1, 1024));
  app.add_option("--planners", planners, "Planners (default taot,echo)")
      ->delimiter(',')
      ->check(taot::bench::BuiltInPlanner());
  app.add_option("--budget-ms", budget_ms, "Time for each of warm and cold, per family (default 200)")
      ->check(CLI::Range(0.01, 1e6));
  app.add_option("--resident", residents, "Without and/or with resident replicas (default off)")
      ->delimiter(',')
      ->check(CLI::IsMember({"off", "on"}));
  if (const std::optional<int> code = taot::cli::ParseOrExit(app, argc, argv, "planner_families")) return *code;
  std::printf(
      "| planner | EP / E | K | warm median (us) | warm worst (us, family) | cold median (us) | cold worst (us, "
      "family) | cold / warm worst (family) | stage median (us) | stage worst (us, family) | split median (us) | split "
      "worst (us, family) |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (const std::string& name : planners) {
    for (int ranks : ranks_list) {
      for (int per_rank : per_rank_list) {
        for (int slots : slots_list) {
          for (const std::string& resident : residents) {
            if (!PrintFamilies(name, ranks, per_rank * ranks, slots, resident == "on", budget_ms)) return 1;
          }
        }
      }
    }
  }
  return 0;
}

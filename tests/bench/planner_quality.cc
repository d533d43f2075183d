// Plan quality over the workload families against a reference planner (a benchmark, not a
// test): for each EP size (E = 4R), K and target residual imbalance, every family's weighted
// transfer cost under the reference and under each other planner, and whether each met the target
// (docs/planners.md, "taot-block").
//   build/tests/bench/planner_quality [--ranks 16,64,256] [--slots 1,2,4] [--targets 2,5,10]
//                                     [--seeds 1,2] [--planners taot,taot-block]
// The first planner is the reference. Per row: the mean cost of each (over families and seeds),
// their ratio, the median and the worst family's ratio (named), and the cases where the planner
// missed a target the reference met. Families: taot/sim/workload_families.h; cases: `taot gen`'s
// generator, 8 ranks per node, 4,096 tokens x top-8 per rank. A markdown table on stdout; every
// case's costs on stderr.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench_cli.h"
#include "taot/planner/registry.h"
#include "taot/planner/scorecard.h"
#include "taot/sim/case_generator.h"
#include "taot/sim/workload_families.h"
#include "taot/tools/parse_or_exit.h"

namespace {

struct Outcome {
  double cost;
  bool met;
};

Outcome Run(const std::string& planner, taot::PlanRequest request, int target) {
  request.target_imbalance_pct = target;
  const taot::Plan plan = taot::PlannerRegistry::BuiltIn().Create(planner).value()->MakePlan(request).value();
  const taot::Scorecard score = taot::Score(request, plan, 0);
  return {score.weighted_cost, score.target_met};
}

struct FamilyRatio {
  double ratio;
  std::string family;
  double reference, other;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<int> ranks_list = {16, 64, 256}, slots_list = {1, 2, 4}, targets = {2, 5, 10}, seeds = {1, 2};
  std::vector<std::string> planners = {"taot", "taot-block"};
  CLI::App app("planner_quality: plan quality over the workload families against a reference planner");
  app.add_option("--ranks", ranks_list, "EP sizes (default 16,64,256)")->delimiter(',')->check(CLI::Range(1, 4096));
  app.add_option("--slots", slots_list, "K values (default 1,2,4)")->delimiter(',')->check(CLI::NonNegativeNumber);
  app.add_option("--targets", targets, "Target imbalances in % (default 2,5,10)")
      ->delimiter(',')
      ->check(CLI::NonNegativeNumber);
  app.add_option("--seeds", seeds, "Seeds (default 1,2)")->delimiter(',')->check(CLI::NonNegativeNumber);
  app.add_option("--planners", planners, "The reference, then the planners to compare (default taot,taot-block)")
      ->delimiter(',')
      ->check(taot::bench::BuiltInPlanner());
  if (const std::optional<int> code = taot::cli::ParseOrExit(app, argc, argv, "planner_quality")) return *code;
  if (planners.size() < 2) {
    std::cerr << "planner_quality: error: --planners: a reference and at least one planner to compare (see "
                 "planner_quality --help)\n";
    return 2;
  }
  const std::string& reference = planners[0];
  std::printf(
      "| planner | EP / E | K | target | mean cost (%s) | mean cost | ratio | median family ratio | worst "
      "family ratio | targets missed that %s met |\n",
      reference.c_str(), reference.c_str());
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (size_t p = 1; p < planners.size(); ++p) {
    for (int ranks : ranks_list) {
      for (int slots : slots_list) {
        for (int target : targets) {
          double sum_reference = 0, sum_other = 0;
          std::vector<FamilyRatio> ratios;
          std::vector<std::string> missed;
          for (int seed : seeds) {
            for (const taot::sim::WorkloadFamily& family : taot::sim::WorkloadFamilies(ranks)) {
              taot::sim::CaseOptions o;
              o.ranks = ranks;
              o.experts = 4 * ranks;
              o.slots_per_rank = slots;
              o.seed = static_cast<uint64_t>(seed);
              family.apply(o);
              const taot::PlanRequest request = taot::sim::GenerateCase(o).value().request;
              const Outcome a = Run(reference, request, target), b = Run(planners[p], request, target);
              sum_reference += a.cost;
              sum_other += b.cost;
              ratios.push_back({a.cost > 0 ? b.cost / a.cost : (b.cost > 0 ? 99.0 : 1.0),
                                family.name + " s" + std::to_string(seed), a.cost, b.cost});
              if (a.met && !b.met) missed.push_back(family.name + " s" + std::to_string(seed));
              std::fprintf(stderr, "  %s EP%d K%d %d%% %s s%d: cost %.0f%s vs %s %.0f%s\n", planners[p].c_str(), ranks,
                           slots, target, family.name.c_str(), seed, b.cost, b.met ? "" : " (missed)",
                           reference.c_str(), a.cost, a.met ? "" : " (missed)");
            }
          }
          std::sort(ratios.begin(), ratios.end(), [](auto& x, auto& y) { return x.ratio < y.ratio; });
          const FamilyRatio& worst = ratios.back();
          std::string missed_text = missed.empty() ? "none" : "";
          for (const std::string& m : missed) missed_text += (missed_text.empty() ? "" : ", ") + m;
          const double n = static_cast<double>(ratios.size());
          std::printf("| %s | EP%d / E%d | %d | %d%% | %.1f | %.1f | %.3f | %.3f | %.3f (%s: %.0f vs %.0f) | %s |\n",
                      planners[p].c_str(), ranks, 4 * ranks, slots, target, sum_reference / n, sum_other / n,
                      sum_other / sum_reference, ratios[ratios.size() / 2].ratio, worst.ratio, worst.family.c_str(),
                      worst.reference, worst.other, missed_text.c_str());
          std::fflush(stdout);
        }
      }
    }
  }
  return 0;
}

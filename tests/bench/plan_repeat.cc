// Plans one CASE file N times with one planner, for instruction counts that do not depend on
// the machine's load:
//   valgrind --tool=callgrind build/tests/bench/plan_repeat CASE.json 21 taot
// (instructions per plan = (count at N=21 - count at N=1) / 20; tests/bench/icount.sh does it).
// Several CASE files, comma-separated, are planned in turn (a new load each plan, as a trainer
// meets them): with valgrind's --branch-sim=yes, the mispredicted branches of fresh loads.
// --fresh makes every plan a new planner's first (issue 16's cold plan), for perf and callgrind.
// --split times the predictive mode's split instead: each CASE's tokens split over the replicas
// of the planner's plan of it (ReplicaSplitter), N times (with --fresh, a new splitter each).
// --stage times local planning's whole stage instead, as the simulator's overhead experiment
// does: the request checked, the plan made, canonical and checked, and hashed (CheckedPlan).
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "bench_cli.h"
#include "taot/planner/case_json.h"
#include "taot/planner/registry.h"
#include "taot/planner/run_planner.h"
#include "taot/planner/split_over_replicas.h"
#include "taot/tools/parse_or_exit.h"

int main(int argc, char** argv) {
  std::vector<std::string> case_paths;
  std::string planner_name = "taot";
  int count = 0;
  bool fresh = false;
  bool split = false;
  bool stage = false;
  CLI::App app("plan_repeat: plans one CASE N times with one planner (prints the assignments made in all)");
  app.add_option("case", case_paths, "CASE file (taot gen), or several, comma-separated, planned in turn")
      ->required()
      ->delimiter(',')
      ->allow_extra_args(false)
      ->check(CLI::ExistingFile);
  app.add_option("count", count, "Plans to make")->required()->check(CLI::Range(0, 100000000));
  app.add_option("planner", planner_name, "Planner (default taot)")->check(taot::bench::BuiltInPlanner());
  app.add_flag("--fresh", fresh, "A new planner for every plan, each a first plan (with --split, a new splitter)");
  app.add_flag("--split", split,
               "Split each CASE over the replicas of the planner's plan of it instead (the predictive mode's split)");
  app.add_flag("--stage", stage,
               "Run local planning's whole stage instead: the request checked, the plan made, canonical, checked "
               "and hashed (what the simulator's overhead experiment times)")
      ->excludes("--split");
  if (const std::optional<int> code = taot::cli::ParseOrExit(app, argc, argv, "plan_repeat")) return *code;
  std::vector<taot::PlanRequest> requests;
  for (const std::string& path : case_paths) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<taot::PlanRequest> request = taot::ParseCase(text.str());
    if (!request.ok()) {
      std::cerr << "plan_repeat: " << path << ": " << request.status().message() << "\n";
      return 1;
    }
    requests.push_back(*std::move(request));
  }
  auto planner = taot::PlannerRegistry::BuiltIn().Create(planner_name).value();
  std::vector<std::vector<taot::Replica>> replicas;  // --split: per CASE, the planner's
  if (split) {
    for (size_t c = 0; c < requests.size(); ++c) {
      absl::StatusOr<taot::Plan> plan = planner->MakePlan(requests[c]);
      if (!plan.ok()) {
        std::cerr << "plan_repeat: " << case_paths[c] << ": " << plan.status().message() << "\n";
        return 1;
      }
      replicas.push_back(std::move(plan->replicas));
    }
  }
  taot::ReplicaSplitter splitter;
  size_t assignments = 0;
  for (int i = 0; i < count; ++i) {
    const size_t c = static_cast<size_t>(i) % requests.size();
    absl::StatusOr<taot::Plan> plan;
    if (split) {
      if (fresh) splitter = taot::ReplicaSplitter();
      plan = splitter.Split(requests[c], replicas[c]);
    } else {
      if (fresh) planner = taot::PlannerRegistry::BuiltIn().Create(planner_name).value();
      uint64_t hash = 0;
      plan = stage ? taot::CheckedPlan(*planner, requests[c], &hash) : planner->MakePlan(requests[c]);
    }
    if (!plan.ok()) {
      std::cerr << "plan_repeat: " << case_paths[c] << ": " << plan.status().message() << "\n";
      return 1;
    }
    assignments += plan->assignments.size();
  }
  std::cout << assignments << "\n";
  return 0;
}

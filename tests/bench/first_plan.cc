// What a first plan costs against a later one, family by family (a benchmark, not a test;
// docs/performance.md, "What a first plan costs"). Per family of each EP size:
//   warm: a kept instance planning the same case again and again, the median plan (as
//     planner_families: the branch predictors learn that one case's branches);
//   rotating: a kept instance planning the family's cases of seeds 1-16 in turn, the median plan
//     (as in training, where each layer's load differs), against the median over those seeds of
//     each one's warm figure (rotating / warm is that ratio, so that harder seeds do not count);
//   instance: a new instance's first plan in a process that has planned before (planner_families'
//     cold), the median over new instances;
//   evicted: a kept instance's plan after a walk over --evict-mb MiB, so that the caches hold
//     little of its code and none of its data (as after other work on the core), the median;
//   process: the first plan of a new process (`taot plan`'s plan_time_us, issue 16's cold): this
//     program run again with --child, the median over --processes runs;
//   warmed process: the same, but the child has first planned the family's seed-2 case on another
//     instance, so that the code is in the caches and only the case and the instance are new.
//   build/tests/bench/first_plan [--ranks 16,64] [--planners taot] [--processes 5] [--evict-mb 64]
//                                [--budget-ms 100] [--experts-per-rank 4] [--slots 2]
//   (a markdown table on stdout, progress on stderr)
// Families and cases as planner_families': taot/sim/workload_families.h, seed 1. One core.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench_cli.h"
#include "family_timing.h"
#include "taot/planner/registry.h"
#include "taot/sim/workload_families.h"
#include "taot/tools/parse_or_exit.h"

namespace {

using taot::bench::Clock;
using taot::bench::FamilyCase;
using taot::bench::Median;
using taot::bench::MedianOver;
using taot::bench::MicrosSince;

struct Shape {
  int ranks, experts, slots;
};

std::unique_ptr<taot::Planner> NewPlanner(const std::string& name) {
  return taot::PlannerRegistry::BuiltIn().Create(name).value();
}

// --child: this process's first plan of the family's case (after one of its seed-2 case if
// `warmed`), in microseconds on stdout.
int Child(const std::string& name, const Shape& shape, size_t family, bool warmed) {
  const taot::sim::WorkloadFamily of = taot::sim::WorkloadFamilies(shape.ranks).at(family);
  if (warmed) (void)NewPlanner(name)->MakePlan(FamilyCase(of, shape.ranks, shape.experts, shape.slots, 2));
  const taot::PlanRequest request = FamilyCase(of, shape.ranks, shape.experts, shape.slots, 1);
  std::unique_ptr<taot::Planner> planner = NewPlanner(name);
  const Clock::time_point start = Clock::now();
  const bool ok = planner->MakePlan(request).ok();
  const double us = MicrosSince(start);
  if (!ok) return 1;
  std::printf("%.3f\n", us);
  return 0;
}

// The median over `runs` new processes of their first plan; exits on a failed child.
double ProcessFirstPlan(const std::string& self, const std::string& name, const Shape& shape, size_t family,
                        bool warmed, int runs) {
  // Quoted for the shell popen runs it with; planner names come from the registry.
  const std::string command = "'" + self + "' --child " + name + " " + std::to_string(shape.ranks) + " " +
                              std::to_string(shape.experts) + " " + std::to_string(shape.slots) + " " +
                              std::to_string(family) + (warmed ? " warmed" : " cold");
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    FILE* child = popen(command.c_str(), "r");
    double us = -1;
    const bool read = child != nullptr && std::fscanf(child, "%lf", &us) == 1;
    if (child == nullptr || pclose(child) != 0 || !read) {
      std::cerr << "first_plan: the child `" << command << "` failed\n";
      std::exit(1);
    }
    times.push_back(us);
  }
  return Median(times);
}

// Walks the buffer a line at a time so that the caches hold it instead of the planner's code and data.
class CacheEvictor {
 public:
  explicit CacheEvictor(size_t mib) : lines_((mib << 20) / sizeof(Line)) {}
  void Evict() {
    for (Line& line : lines_) ++line.bytes[0];
  }

 private:
  struct alignas(64) Line {
    unsigned char bytes[64] = {};
  };
  std::vector<Line> lines_;
};

struct Row {
  std::string family;
  double warm, rotating, instance, evicted, process, warmed_process;
  double seeds_warm;  // the median over seeds 1-16 of each one's warm figure
};

// "median (worst, family)" of `figure` / `baseline` over the rows.
std::string RatioSummary(const std::vector<Row>& rows, double Row::*figure, double Row::*baseline = &Row::warm) {
  std::vector<double> ratios;
  const Row* worst = &rows.front();
  for (const Row& r : rows) {
    ratios.push_back(r.*figure / r.*baseline);
    if (r.*figure / r.*baseline > worst->*figure / worst->*baseline) worst = &r;
  }
  char text[160];
  std::snprintf(text, sizeof(text), "%.2f (%.2f, %s)", Median(ratios), worst->*figure / worst->*baseline,
                worst->family.c_str());
  return text;
}

// Times every family of the shape, prints their rows and returns the shape's summary row.
std::string PrintShape(const std::string& self, const std::string& name, const Shape& shape, int processes,
                       CacheEvictor& evictor, double budget_ms) {
  const std::vector<taot::sim::WorkloadFamily> families = taot::sim::WorkloadFamilies(shape.ranks);
  std::vector<Row> rows;
  for (size_t f = 0; f < families.size(); ++f) {
    std::vector<taot::PlanRequest> seeds;  // the family's cases of seeds 1-16; seed 1's is the case
    for (uint64_t seed = 1; seed <= 16; ++seed) {
      seeds.push_back(FamilyCase(families[f], shape.ranks, shape.experts, shape.slots, seed));
    }
    const taot::PlanRequest& request = seeds.front();
    std::unique_ptr<taot::Planner> kept = NewPlanner(name);
    (void)kept->MakePlan(request);  // sizes its scratch
    Row row{families[f].name, 0, 0, 0, 0, 0, 0, 0};
    row.warm = MedianOver(budget_ms, [&] { (void)kept->MakePlan(request); });
    std::vector<double> seed_warm;
    for (const taot::PlanRequest& one : seeds) {
      seed_warm.push_back(MedianOver(budget_ms / 16, [&] { (void)kept->MakePlan(one); }));
    }
    row.seeds_warm = Median(seed_warm);
    size_t next = 0;
    row.rotating = MedianOver(budget_ms, [&] { (void)kept->MakePlan(seeds[next++ % seeds.size()]); });
    row.instance = MedianOver(budget_ms, [&] { (void)NewPlanner(name)->MakePlan(request); });
    std::vector<double> evicted;
    for (int i = 0; i < 15; ++i) {
      evictor.Evict();
      const Clock::time_point start = Clock::now();
      (void)kept->MakePlan(request);
      evicted.push_back(MicrosSince(start));
    }
    row.evicted = Median(evicted);
    row.process = ProcessFirstPlan(self, name, shape, f, false, processes);
    row.warmed_process = ProcessFirstPlan(self, name, shape, f, true, processes);
    std::fprintf(stderr,
                 "  %s EP%d E%d K%d %-12s warm %8.1f  rotating %8.1f  instance %8.1f  evicted %8.1f  process %8.1f  "
                 "warmed process %8.1f us\n",
                 name.c_str(), shape.ranks, shape.experts, shape.slots, row.family.c_str(), row.warm, row.rotating,
                 row.instance, row.evicted, row.process, row.warmed_process);
    std::printf(
        "| %s | EP%d / E%d | %d | %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f | %.2f | %.2f | %.2f |\n",
        name.c_str(), shape.ranks, shape.experts, shape.slots, row.family.c_str(), row.warm, row.rotating, row.instance,
        row.evicted, row.process, row.warmed_process, row.rotating / row.seeds_warm, row.instance / row.warm,
        row.evicted / row.warm, row.process / row.warm, row.warmed_process / row.warm);
    rows.push_back(row);
  }
  std::fflush(stdout);
  char head[96];
  std::snprintf(head, sizeof(head), "| %s | EP%d / E%d | %d | ", name.c_str(), shape.ranks, shape.experts, shape.slots);
  return head + RatioSummary(rows, &Row::rotating, &Row::seeds_warm) + " | " + RatioSummary(rows, &Row::instance) +
         " | " + RatioSummary(rows, &Row::evicted) + " | " + RatioSummary(rows, &Row::process) + " | " +
         RatioSummary(rows, &Row::warmed_process) + " |\n";
}

// This program's path, to run it again as a child.
std::string SelfPath() {
  std::vector<char> path(4096);
  const ssize_t n = readlink("/proc/self/exe", path.data(), path.size() - 1);
  return n > 0 ? std::string(path.data(), static_cast<size_t>(n)) : std::string();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 8 && std::string(argv[1]) == "--child") {
    return Child(argv[2], {std::atoi(argv[3]), std::atoi(argv[4]), std::atoi(argv[5])},
                 static_cast<size_t>(std::atoi(argv[6])), std::string(argv[7]) == "warmed");
  }
  std::vector<int> ranks_list = {16, 64};
  std::vector<std::string> planners = {"taot"};
  int processes = 5, evict_mib = 64, per_rank = 4, slots = 2;
  double budget_ms = 100;
  CLI::App app("first_plan: what a first plan costs against a warm one, per family (docs/performance.md)");
  app.add_option("--ranks", ranks_list, "EP sizes (default 16,64)")->delimiter(',')->check(CLI::Range(1, 4096));
  app.add_option("--planners", planners, "Planners (default taot)")
      ->delimiter(',')
      ->check(taot::bench::BuiltInPlanner());
  app.add_option("--processes", processes, "New processes per family (default 5)")->check(CLI::Range(1, 1000));
  app.add_option("--evict-mb", evict_mib, "MiB read to evict the caches (default 64)")->check(CLI::Range(1, 65536));
  app.add_option("--budget-ms", budget_ms, "Time for each warm figure, per family (default 100)")
      ->check(CLI::Range(0.01, 1e6));
  app.add_option("--experts-per-rank", per_rank, "E / R (default 4)")->check(CLI::Range(1, 1024));
  app.add_option("--slots", slots, "K, guest slots per rank (default 2)")->check(CLI::NonNegativeNumber);
  if (const std::optional<int> code = taot::cli::ParseOrExit(app, argc, argv, "first_plan")) return *code;
  const std::string self = SelfPath();
  if (self.empty() || self.find('\'') != std::string::npos) {
    std::cerr << "first_plan: cannot run the children: /proc/self/exe unreadable or its path has a quote\n";
    return 2;
  }
  CacheEvictor evictor(static_cast<size_t>(evict_mib));
  std::printf(
      "| planner | EP / E | K | family | warm (us) | rotating (us) | new instance (us) | after eviction (us) | new "
      "process (us) | warmed process (us) | rotating / its seeds' warm | instance / warm | evicted / warm | process / "
      "warm | "
      "warmed process / warm |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::vector<std::string> summaries;
  for (const std::string& name : planners) {
    for (int ranks : ranks_list) {
      summaries.push_back(PrintShape(self, name, {ranks, per_rank * ranks, slots}, processes, evictor, budget_ms));
    }
  }
  std::printf(
      "\n| planner | EP / E | K | rotating / its seeds' warm: median (worst, family) | instance / warm | evicted / "
      "warm | "
      "process / warm | warmed process / warm |\n"
      "|---|---|---|---|---|---|---|---|\n");
  for (const std::string& row : summaries) std::printf("%s", row.c_str());
  return 0;
}

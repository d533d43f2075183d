// The experiments of `taot-sim run` and `taot-sim report`: each sweeps one variable of a base
// scenario, runs every planner on identical workloads, and writes DIR/NAME.csv, DIR/NAME.json
// (what it is and the command that reproduces it) and DIR/NAME.png (sim/report/plot.py).
// docs/results.md is their report; docs/model.md the model behind them.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "taot/planner/registry.h"
#include "taot/sim/scenario.h"

namespace taot::sim {

struct ExperimentOptions {
  Scenario base = DefaultScenario();
  std::string out_dir = "taot-sim-results";
  // Small sweeps for CI (a few layers, steps and points).
  bool quick = false;
  // Given on the reproduce command line when the base came from a file.
  std::string scenario_file;
  // sim/report/{plot,report}.py and the Python with matplotlib that runs them.
  std::string report_dir;
  std::string python = "/usr/bin/python3";
  // Progress on stderr.
  bool progress = true;
  // The planners the experiments compare (all of them, in order, where an experiment runs every
  // planner) and create by name; a copy of the built-ins with a plugin registered makes the
  // plugin join. It must hold "none" (every speedup's baseline) and "taot".
  const PlannerRegistry* planners = &PlannerRegistry::BuiltIn();
};

// table1, imbalance, scale, slots, overhead, modes, frontier.
const std::vector<std::string>& ExperimentNames();

// Unknown names are NotFound (listing the known); I/O and planner errors stop the run.
absl::Status RunExperiment(const std::string& name, const ExperimentOptions& options);

// Every experiment, then sim/report/report.py writes `doc` from their files.
absl::Status RunReport(const ExperimentOptions& options, const std::string& doc);

}  // namespace taot::sim

// taot-sim: the step-time model of docs/model.md, the experiments of docs/results.md, and
// replay of a recorded routing trace under any planner.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "taot/planner/case_json.h"
#include "taot/planner/registry.h"
#include "taot/sim/experiments.h"
#include "taot/sim/request_dump.h"
#include "taot/sim/scenario.h"
#include "taot/sim/sequence_workload.h"
#include "taot/sim/simulator.h"
#include "taot/sim/trace.h"
#include "taot/tools/cli_support.h"
#include "taot/tools/parse_or_exit.h"

namespace taot::sim::cli {
namespace {

using taot::cli::InRange;

// The synthetic workload is held in memory whole (Materialize): 1 GiB of counts at most.
constexpr double kMaxWorkloadEntries = 0x1p27;

// Options every subcommand shares: the base scenario and its quick overrides (unset: the
// scenario's value). The ranges are the scenario file's (docs/model.md) and the request limits.
struct ScenarioArgs {
  std::string file;
  std::string model, cluster, mode;
  std::optional<int> ranks, slots, layers, steps, microbatches;
  std::optional<double> imbalance;
  std::optional<int64_t> seed;
};

void AddScenarioOptions(CLI::App& cmd, ScenarioArgs& a) {
  cmd.add_option("--scenario", a.file, "Scenario file (JSON, docs/model.md); flags below override it");
  cmd.add_option("--model", a.model, "Model preset: qwen3-30b-a3b (default) or deepseek-v3");
  cmd.add_option("--cluster", a.cluster, "Cluster preset: h800 (default) or h100");
  cmd.add_option("--ranks", a.ranks, "Expert-parallel size (default 16)")->check(InRange(1, kMaxRanks));
  cmd.add_option("--slots", a.slots, "Guest slots per rank, K (default 2)")->check(InRange(0, kMaxExperts));
  cmd.add_option("--mode", a.mode, "Planning: local (default), remote or predictive");
  cmd.add_option("--layers", a.layers, "MoE layers to simulate (default: all of the model's)")->check(InRange(1, 1024));
  cmd.add_option("--steps", a.steps, "Optimizer steps (default 4; the first is warm-up)")->check(InRange(1, 100000));
  cmd.add_option("--microbatches", a.microbatches, "Microbatches per step (default 4)")->check(InRange(1, 1024));
  cmd.add_option("--imbalance", a.imbalance,
                 "Initial imbalance of the synthetic workload, a fraction or a percentage (default 0.5, or 50%)")
      ->transform(taot::cli::PercentAccepted(taot::cli::ImbalanceUnit::kFraction))
      ->check(InRange(0, kMaxRanks - 1));
  cmd.add_option("--seed", a.seed, "Seed of the synthetic workload (default 1)")
      ->check(InRange(0, 0x1p53, "[0, 2^53]"));
}

absl::StatusOr<Scenario> BuildScenario(const ScenarioArgs& a) {
  Scenario sc = DefaultScenario();
  if (!a.file.empty()) {
    absl::StatusOr<Scenario> read = ReadScenario(a.file, sc);
    if (!read.ok()) return read.status();
    sc = *read;
  }
  if (!a.model.empty()) {
    absl::StatusOr<ModelSpec> m = ModelPreset(a.model);
    if (!m.ok()) return absl::InvalidArgumentError(absl::StrCat("--model: ", m.status().message()));
    sc.model = *m;
    sc.workload.layers = sc.model.moe_layers;
  }
  if (!a.cluster.empty()) {
    absl::StatusOr<ClusterSpec> c = ClusterPreset(a.cluster);
    if (!c.ok()) return absl::InvalidArgumentError(absl::StrCat("--cluster: ", c.status().message()));
    sc.cluster = *c;
    sc.cluster_name = a.cluster;
  }
  if (!a.mode.empty()) {
    absl::StatusOr<PlanningMode> m = ParsePlanningMode(a.mode);
    if (!m.ok()) return absl::InvalidArgumentError(absl::StrCat("--", m.status().message()));
    sc.mode = *m;
  }
  sc.ranks = a.ranks.value_or(sc.ranks);
  sc.slots_per_rank = a.slots.value_or(sc.slots_per_rank);
  sc.workload.layers = a.layers.value_or(sc.workload.layers);
  sc.workload.steps = a.steps.value_or(sc.workload.steps);
  sc.workload.microbatches = a.microbatches.value_or(sc.workload.microbatches);
  sc.workload.imbalance = a.imbalance.value_or(sc.workload.imbalance);
  if (a.seed) sc.workload.seed = static_cast<uint64_t>(*a.seed);
  if (absl::Status s = ValidateScenario(sc); !s.ok()) return s;
  return sc;
}

// Refuses a synthetic workload too large to hold before generating any of it; the product is
// formed in double, where it cannot overflow.
absl::Status CheckWorkloadSize(const Scenario& sc) {
  const SequenceOptions& w = sc.workload;
  const double entries = static_cast<double>(w.layers) * w.steps * w.microbatches * sc.ranks * sc.model.experts;
  if (entries <= kMaxWorkloadEntries) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "the workload of %d layers x %d steps x %d microbatches x %d ranks x %d experts is %.4g load entries, "
      "more than the limit of 2^27 held in memory; lower --layers, --steps or --microbatches",
      w.layers, w.steps, w.microbatches, sc.ranks, sc.model.experts, entries));
}

absl::StatusOr<std::unique_ptr<Workload>> BuildWorkload(const Scenario& sc) {
  if (!sc.trace.empty()) return ReadTrace(sc.trace);
  if (absl::Status s = CheckWorkloadSize(sc); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<SequenceWorkload>> w = SequenceWorkload::Create(WorkloadOptions(sc));
  if (!w.ok()) return absl::InvalidArgumentError(absl::StrCat("workload.", w.status().message()));
  return Materialize(**w);
}

// A CASE file (`taot gen`, docs/formats.md) as a one-matrix workload; the scenario takes the
// case's ranks, slots and topology.
absl::StatusOr<std::unique_ptr<Workload>> CaseWorkload(const std::string& path, Scenario& sc) {
  absl::StatusOr<std::string> text = ReadJsonFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<PlanRequest> request = ParseCase(*text);
  if (!request.ok()) return absl::Status(request.status().code(), absl::StrCat(path, ": ", request.status().message()));
  const Topology& topo = request->topology();
  if (!topo.tree_costs()) {
    return absl::InvalidArgumentError(absl::StrCat(path,
                                                   ": topology: the simulator models nodes of equal size with one "
                                                   "inter-node cost; give ranks_per_node, not a cost matrix"));
  }
  sc.ranks = request->ranks();
  sc.slots_per_rank = request->slots_per_rank();
  sc.cluster.gpus_per_node = static_cast<int>(topo.ranks_of_node(0).size());
  sc.inter_node_cost = topo.tree_costs()->inter;
  return SingleMatrix(std::move(request->load));
}

struct SimulateArgs {
  ScenarioArgs scenario;
  std::string trace;
  std::string case_file;
  std::vector<std::string> planners;
  std::vector<std::string> params;
  std::string dump_requests;
  bool no_progress = false;
};

absl::StatusOr<PlannerParams> ParseParams(const std::vector<std::string>& items) {
  PlannerParams params;
  for (const std::string& item : items) {
    std::vector<std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || kv[0].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--param: must be key=value, got '", item, "'"));
    }
    params[kv[0]] = kv[1];
  }
  return params;
}

absl::Status RunSimulate(const SimulateArgs& a) {
  absl::StatusOr<Scenario> sc = BuildScenario(a.scenario);
  if (!sc.ok()) return sc.status();
  if (!a.trace.empty()) sc->trace = a.trace;
  absl::StatusOr<std::unique_ptr<Workload>> workload =
      a.case_file.empty() ? BuildWorkload(*sc) : CaseWorkload(a.case_file, *sc);
  if (!workload.ok()) return workload.status();
  const WorkloadShape shape = (*workload)->shape();
  if (!a.trace.empty() && !a.scenario.ranks) sc->ranks = shape.ranks;
  absl::StatusOr<PlannerParams> params = ParseParams(a.params);
  if (!params.ok()) return params.status();
  std::vector<std::string> names = a.planners;
  if (names.empty()) names = PlannerRegistry::BuiltIn().names();
  // The speedup column is against no replication: it always runs.
  if (std::find(names.begin(), names.end(), "none") == names.end()) names.push_back("none");
  // Every planner is made before anything is printed: a bad name or parameter fails alone.
  std::vector<std::unique_ptr<Planner>> planners;
  for (const std::string& name : names) {
    absl::StatusOr<std::unique_ptr<Planner>> planner =
        PlannerRegistry::BuiltIn().Create(name, name == "taot" ? *params : PlannerParams{});
    if (!planner.ok()) return planner.status();
    planners.push_back(*std::move(planner));
  }
  // Every planner's folder is made before any runs: a directory in use fails alone.
  std::vector<RequestObserver> observers(names.size());
  if (!a.dump_requests.empty()) {
    if (absl::Status s = PrepareRequestDirectory(a.dump_requests); !s.ok()) return s;
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string folder = (std::filesystem::path(a.dump_requests) / names[i]).string();
      if (absl::Status s = PrepareRequestDirectory(folder); !s.ok()) return s;
      observers[i] = WriteRequestsTo(folder, names[i]);
    }
  }
  std::printf(
      "%s on %s, EP%d, K=%d, %s planning; %d layers x %d steps x %d microbatches%s; each simulated layer "
      "stands for %g of the model's %d MoE layers\n",
      sc->model.name.c_str(), sc->cluster_name.c_str(), sc->ranks, sc->slots_per_rank, PlanningModeName(sc->mode),
      shape.layers, shape.steps, shape.microbatches, sc->trace.empty() ? "" : absl::StrCat(" from ", sc->trace).c_str(),
      static_cast<double>(sc->model.moe_layers) / shape.layers, sc->model.moe_layers);
  std::printf("%-15s %10s %8s %10s %10s %10s %10s %10s %10s\n", "planner", "step (ms)", "speedup", "imb before",
              "imb after", "intra/step", "inter/step", "stall (ms)", "plan (ms)");
  // Long runs (EP256 deepseek-v3: seconds per planner) say where they are, on stderr.
  const absl::Time start = absl::Now();
  double none_ms = 0;
  std::vector<std::pair<std::string, SimResult>> rows;
  for (size_t i = 0; i < names.size(); ++i) {
    const absl::Duration elapsed = absl::Now() - start;
    if (!a.no_progress && elapsed > absl::Seconds(2)) {
      std::fprintf(stderr, "[simulate] %zu/%zu %s (%.0f s so far)\n", i + 1, names.size(), names[i].c_str(),
                   absl::ToDoubleSeconds(elapsed));
    }
    absl::StatusOr<SimResult> r = Simulate(*sc, **workload, *planners[i], observers[i]);
    if (!r.ok()) return absl::Status(r.status().code(), absl::StrCat(names[i], ": ", r.status().message()));
    if (names[i] == "none") none_ms = r->step_ms;
    rows.emplace_back(names[i], *r);
  }
  for (const auto& [name, r] : rows) {
    std::printf("%-15s %10.2f %8s %9.1f%% %9.1f%% %10.1f %10.1f %10.2f %10.3f\n", name.c_str(), r.step_ms,
                absl::StrFormat("%.3fx", none_ms / r.step_ms).c_str(), r.imbalance_before_pct, r.imbalance_after_pct,
                r.transfers_intra, r.transfers_inter, r.stall_ms, r.plan_ms);
  }
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  CLI::App app{"taot-sim: modelled MoE training step time under each planner (docs/model.md, docs/results.md)"};
  app.require_subcommand(1);
  absl::Status status;

  ScenarioArgs run_scenario;
  ExperimentOptions options;
  options.report_dir = TAOT_SIM_REPORT_DIR;
  std::string experiment;
  bool no_progress = false;
  // `run` writes into the current folder unless told otherwise; `report` regenerates the
  // repository's own pages, so its default is where they live.
  std::string run_out = "taot-sim-results", report_out = "docs/results";
  auto common = [&](CLI::App& cmd, std::string& out) {
    AddScenarioOptions(cmd, run_scenario);
    cmd.add_option("--out", out, "Folder for the CSV, JSON and PNG files")->capture_default_str();
    cmd.add_flag("--quick", options.quick, "Small sweeps (a CI smoke test), not the published figures");
    cmd.add_flag("--no-progress", no_progress, "No progress on stderr");
    cmd.add_option("--python", options.python, "Python with matplotlib")->capture_default_str();
  };
  auto prepare = [&]() -> absl::Status {
    absl::StatusOr<Scenario> sc = BuildScenario(run_scenario);
    if (!sc.ok()) return sc.status();
    if (absl::Status s = CheckWorkloadSize(*sc); !s.ok()) return s;
    options.base = *sc;
    options.scenario_file = run_scenario.file;
    options.progress = !no_progress;
    return absl::OkStatus();
  };

  CLI::App* run_cmd = app.add_subcommand("run", "Run one experiment: write DIR/NAME.csv, .json and .png");
  run_cmd->add_option("experiment", experiment, "table1, imbalance, scale, slots, overhead, modes or frontier")
      ->required();
  common(*run_cmd, run_out);
  run_cmd->callback([&] {
    options.out_dir = run_out;
    status = prepare();
    if (status.ok()) status = RunExperiment(experiment, options);
    if (status.ok()) std::printf("wrote %s/%s.{csv,json,png}\n", options.out_dir.c_str(), experiment.c_str());
  });

  std::string doc = "docs/results.md";
  CLI::App* report_cmd = app.add_subcommand("report", "Run every experiment and regenerate the report");
  common(*report_cmd, report_out);
  report_cmd->add_option("--doc", doc, "The report to write")->capture_default_str();
  report_cmd->callback([&] {
    options.out_dir = report_out;
    status = prepare();
    if (status.ok()) status = RunReport(options, doc);
    if (status.ok()) std::printf("wrote %s (data in %s)\n", doc.c_str(), options.out_dir.c_str());
  });

  SimulateArgs sim;
  CLI::App* sim_cmd = app.add_subcommand("simulate", "Model one scenario (or a recorded trace) under each planner");
  AddScenarioOptions(*sim_cmd, sim.scenario);
  sim_cmd->add_option("--trace", sim.trace, "Replay a trace: a folder of layer_NNN.csv/.npy (docs/formats.md)");
  sim_cmd->add_option("--case", sim.case_file, "One CASE file (taot gen) as every layer's load")->excludes("--trace");
  sim_cmd->add_option("--planners", sim.planners, "Planners to run (default: all)")->delimiter(',');
  sim_cmd->add_option("--param", sim.params, "A taot parameter key=value (repeatable), e.g. target_imbalance_pct=auto");
  sim_cmd->add_option("--dump-requests", sim.dump_requests,
                      "Write each request a planner is timed on as a CASE file, DIR/PLANNER/step_S_layer_L_mb_M.json "
                      "(DIR new or empty; one file per planner, step, layer and microbatch: --planners and --layers "
                      "keep it small)");
  sim_cmd->add_flag("--no-progress", sim.no_progress, "No progress on stderr (shown once a run passes 2 s)");
  sim_cmd->callback([&] { status = RunSimulate(sim); });

  ScenarioArgs export_scenario;
  std::string export_dir, export_format = "csv";
  CLI::App* export_cmd = app.add_subcommand("export-trace", "Write the scenario's synthetic workload as a trace");
  AddScenarioOptions(*export_cmd, export_scenario);
  export_cmd->add_option("--out", export_dir, "Folder to write layer_NNN files into (must hold none yet)")->required();
  export_cmd->add_option("--format", export_format, "csv or npy")->capture_default_str();
  export_cmd->callback([&] {
    absl::StatusOr<Scenario> sc = BuildScenario(export_scenario);
    if (!sc.ok()) {
      status = sc.status();
      return;
    }
    if (export_format != "csv" && export_format != "npy") {
      status = absl::InvalidArgumentError(absl::StrCat("--format: must be csv or npy, got '", export_format, "'"));
      return;
    }
    absl::StatusOr<std::unique_ptr<Workload>> w = BuildWorkload(*sc);
    status = w.ok() ? WriteTrace(**w, export_dir, export_format == "csv" ? TraceFormat::kCsv : TraceFormat::kNpy)
                    : w.status();
  });

  if (const std::optional<int> code = taot::cli::ParseOrExit(app, argc, argv, "taot-sim")) return *code;
  if (!status.ok()) std::cerr << "taot-sim: error: " << status.message() << "\n";
  return taot::cli::ExitCodeOf(status);
}

}  // namespace
}  // namespace taot::sim::cli

int main(int argc, char** argv) {
  return taot::cli::ExitOnException("taot-sim", [&] { return taot::sim::cli::Main(argc, argv); });
}

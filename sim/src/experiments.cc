#include "taot/sim/experiments.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "taot/planner/hardware_fields.h"
#include "taot/planner/registry.h"
#include "taot/sim/sequence_workload.h"
#include "taot/sim/simulator.h"

namespace taot::sim {
namespace {

// A planner as the experiments name it: "taot-auto" is `taot` with target_imbalance_pct=auto
// on the scenario's own cluster and model.
struct PlannerSpec {
  std::string label;
  std::string name;
  PlannerParams params;
  bool reuse_chosen_target = false;  // Scenario::reuse_chosen_target for this planner
};

PlannerParams HardwareParams(const Scenario& sc) {
  PlannerParams params = HardwareFieldParams(sc.cluster, sc.model);
  params.insert({{"target_imbalance_pct", "auto"},
                 {"cluster", sc.cluster_name},
                 {"model", sc.model.name},
                 {"microbatches", absl::StrCat(sc.workload.microbatches)}});
  return params;
}

// Every planner of the registry, in its order (the built-ins: taot first, none last), each with
// its default parameters.
std::vector<PlannerSpec> AllPlanners(const PlannerRegistry& registry) {
  std::vector<PlannerSpec> out;
  for (const std::string& name : registry.names()) out.push_back({name, name, {}});
  return out;
}

PlannerSpec AutoPlanner(const Scenario& sc) { return {"taot-auto", "taot", HardwareParams(sc)}; }

PlannerSpec FixedTarget(double target) {
  return {"taot", "taot", {{"target_imbalance_pct", absl::StrFormat("%g", target)}}};
}

// Progress over a sweep: one line, rewritten in place on a terminal.
class Progress {
 public:
  Progress(std::string experiment, int total, bool enabled)
      : experiment_(std::move(experiment)), total_(total), enabled_(enabled), tty_(isatty(2) != 0) {}
  void Step(const std::string& what) {
    ++done_;
    if (!enabled_) return;
    std::fprintf(stderr, "%s[%s] %d/%d %s%s", tty_ ? "\r\033[K" : "", experiment_.c_str(), done_, total_, what.c_str(),
                 tty_ ? "" : "\n");
    if (tty_ && done_ == total_) std::fputc('\n', stderr);
  }

 private:
  std::string experiment_;
  int total_, done_ = 0;
  bool enabled_, tty_;
};

// A CSV file: a header and rows of already formatted cells.
class Csv {
 public:
  explicit Csv(std::vector<std::string> header) : header_(std::move(header)) {}
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  absl::Status Write(const std::string& path) const {
    std::ofstream out(path);
    out << absl::StrJoin(header_, ",") << "\n";
    for (const auto& row : rows_) out << absl::StrJoin(row, ",") << "\n";
    out.close();
    if (!out) return absl::InternalError(absl::StrCat(path, ": cannot write"));
    return absl::OkStatus();
  }

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

std::string Num(double v) { return absl::StrFormat("%.6g", v); }

// The experiment being run: its options, where its files go, how it is reproduced.
struct Context {
  const ExperimentOptions& options;
  std::string name;
  Scenario base;

  const PlannerRegistry& registry() const { return *options.planners; }
  std::string Path(const char* ext) const { return (std::filesystem::path(options.out_dir) / (name + ext)).string(); }
  std::string Command() const {
    std::string cmd = absl::StrCat("taot-sim run ", name, " --out ", options.out_dir);
    if (options.quick) absl::StrAppend(&cmd, " --quick");
    if (!options.scenario_file.empty()) absl::StrAppend(&cmd, " --scenario ", options.scenario_file);
    return cmd;
  }
  // A sweep's value in quick or full mode.
  template <typename T>
  T Pick(T full, T quick) const {
    return options.quick ? quick : full;
  }
};

// The base scenario, shortened in quick mode.
Scenario BaseScenario(const ExperimentOptions& options) {
  Scenario sc = options.base;
  if (options.quick) {
    sc.workload.layers = std::min(sc.workload.layers, 4);
    sc.workload.steps = std::min(sc.workload.steps, 2);
    sc.workload.microbatches = std::min(sc.workload.microbatches, 2);
  }
  return sc;
}

using Results = std::vector<std::pair<PlannerSpec, SimResult>>;

// Every planner on one scenario's workload (generated once, identical for all).
absl::StatusOr<Results> RunPoint(const PlannerRegistry& registry, Scenario sc, const std::vector<PlannerSpec>& planners,
                                 const std::string& label, Progress& progress) {
  sc.workload.layers = std::min(sc.workload.layers, sc.model.moe_layers);
  if (absl::Status s = ValidateScenario(sc); !s.ok()) return s;
  absl::StatusOr<std::unique_ptr<SequenceWorkload>> generated = SequenceWorkload::Create(WorkloadOptions(sc));
  if (!generated.ok()) {
    return absl::Status(generated.status().code(), absl::StrCat(label, ": workload.", generated.status().message()));
  }
  const std::unique_ptr<Workload> workload = Materialize(**generated);
  Results out;
  for (const PlannerSpec& spec : planners) {
    absl::StatusOr<std::unique_ptr<Planner>> planner = registry.Create(spec.name, spec.params);
    if (!planner.ok()) return planner.status();
    Scenario planner_sc = sc;
    planner_sc.reuse_chosen_target = spec.reuse_chosen_target;
    absl::StatusOr<SimResult> r = Simulate(planner_sc, *workload, **planner);
    if (!r.ok())
      return absl::Status(r.status().code(), absl::StrCat(label, ", ", spec.label, ": ", r.status().message()));
    out.emplace_back(spec, *r);
    progress.Step(absl::StrCat(label, " ", spec.label));
  }
  return out;
}

const SimResult* Find(const Results& results, const std::string& label) {
  for (const auto& [spec, r] : results) {
    if (spec.label == label) return &r;
  }
  return nullptr;
}

const std::vector<std::string> kStepColumns = {
    "step_time_ms", "speedup", "imbalance_after_pct", "transfers_intra", "transfers_inter",
    "stall_ms",     "plan_ms", "imbalance_before_pct"};

std::vector<std::string> StepCells(const SimResult& r, const SimResult& none) {
  return {Num(r.step_ms),         Num(none.step_ms / r.step_ms), Num(r.imbalance_after_pct),
          Num(r.transfers_intra), Num(r.transfers_inter),        Num(r.stall_ms),
          Num(r.plan_ms),         Num(r.imbalance_before_pct)};
}

std::map<std::string, std::string> ScenarioSummary(const Scenario& sc) {
  return {
      {"model", sc.model.name},
      {"cluster", absl::StrCat(sc.cluster_name, " (NVLink ", sc.cluster.nvlink_gbps, " GB/s, IB ",
                               sc.cluster.ib_gbps_per_gpu(), " GB/s per GPU, ", sc.cluster.gemm_tflops, " TFLOP/s)")},
      {"ranks (EP)", absl::StrCat(sc.ranks)},
      {"guest slots K", absl::StrCat(sc.slots_per_rank)},
      {"lambda", Num(sc.inter_node_cost)},
      {"planning", PlanningModeName(sc.mode)},
      {"workload", absl::StrCat(sc.workload.layers, " layers simulated of ", sc.model.moe_layers, ", ",
                                sc.workload.steps, " steps (first is warm-up) x ", sc.workload.microbatches,
                                " microbatches of ", sc.model.tokens_per_rank, " tokens per rank; initial imbalance ",
                                Num(sc.workload.imbalance * 100), "%, drift ", Num(sc.workload.drift), ", burst rate ",
                                Num(sc.workload.burst_rate), ", seed ", sc.workload.seed)}};
}

// The files beside the CSV: metadata, then the plot.
// `scenario` describes the runs when they do not all share the base scenario.
absl::Status Finish(const Context& ctx, const Csv& csv, const std::string& title, const std::string& description,
                    std::map<std::string, std::string> scenario = {}) {
  if (scenario.empty()) scenario = ScenarioSummary(ctx.base);
  if (absl::Status s = csv.Write(ctx.Path(".csv")); !s.ok()) return s;
  nlohmann::json meta = {{"experiment", ctx.name},
                         {"title", title},
                         {"description", description},
                         {"command", ctx.Command()},
                         {"report_command", absl::StrCat("taot-sim report", ctx.options.quick ? " --quick" : "")},
                         {"scenario", scenario},
                         {"quick", ctx.options.quick}};
  std::ofstream(ctx.Path(".json")) << meta.dump(2) << "\n";
  const std::string cmd = absl::StrCat("'", ctx.options.python, "' '", ctx.options.report_dir, "/plot.py' ", ctx.name,
                                       " '", ctx.Path(".csv"), "' '", ctx.Path(".png"), "'");
  if (const int rc = std::system(cmd.c_str()); rc != 0) {
    return absl::InternalError(absl::StrCat("plot.py failed (status ", rc, ") on ", ctx.Path(".csv"),
                                            "; the CSV is kept. Is python3-matplotlib installed (scripts/setup.sh)?"));
  }
  return absl::OkStatus();
}

// Sweeps `values` of one variable; `apply` sets it on the scenario.
template <typename T>
absl::Status StepSweep(Context ctx, const char* column, const std::vector<T>& values,
                       const std::function<void(Scenario&, T)>& apply, const std::string& title,
                       const std::string& description) {
  std::vector<std::string> header = {column, "planner"};
  header.insert(header.end(), kStepColumns.begin(), kStepColumns.end());
  Csv csv(header);
  const std::vector<PlannerSpec> planners = AllPlanners(ctx.registry());
  Progress progress(ctx.name, static_cast<int>(values.size() * planners.size()), ctx.options.progress);
  // Bursts add heat on top of the calibrated imbalance; without them the swept imbalance is the
  // one the planners meet (modes and frontier keep them).
  ctx.base.workload.burst_rate = 0;
  for (T v : values) {
    Scenario sc = ctx.base;
    apply(sc, v);
    absl::StatusOr<Results> results = RunPoint(ctx.registry(), sc, planners, absl::StrCat(column, "=", v), progress);
    if (!results.ok()) return results.status();
    const SimResult& none = *Find(*results, "none");
    for (const auto& [spec, r] : *results) {
      std::vector<std::string> row = {absl::StrCat(v), spec.label};
      for (std::string& cell : StepCells(r, none)) row.push_back(std::move(cell));
      csv.Add(std::move(row));
    }
  }
  return Finish(ctx, csv, title, description);
}

// The TAOT paper's Table 1 (arXiv 2608.03676; K = 2, λ = 3): improvement in pp and weighted cost, per initial
// imbalance, for ECHO / LLEP / LPLB / TAOT (TAOT is our taot-paper).
struct PaperFigure {
  double improvement_pp, weighted_cost;
};
std::optional<PaperFigure> PaperTable1(int ep, int initial, const std::string& planner) {
  static const std::map<std::pair<int, int>, std::vector<PaperFigure>> kTable = {
      {{16, 10}, {{-9.4, 24}, {-9.4, 20}, {-8.8, 32}, {-9.4, 17}}},
      {{16, 30}, {{-27.7, 24}, {-28.7, 22}, {-28.9, 32}, {-28.7, 18}}},
      {{16, 50}, {{-48.2, 30}, {-48.5, 23}, {-49.6, 32}, {-48.5, 18}}},
      {{16, 70}, {{-68.2, 42}, {-68.9, 29}, {-69.5, 32}, {-68.9, 27}}},
      {{32, 10}, {{-9.5, 72}, {-9.5, 44}, {-8.6, 128}, {-9.5, 38}}},
      {{32, 30}, {{-28.2, 75}, {-28.4, 42}, {-27.6, 128}, {-28.4, 37}}},
      {{32, 50}, {{-49.1, 71}, {-49.4, 58}, {-47.2, 128}, {-49.4, 44}}},
      {{32, 70}, {{-66.4, 74}, {-66.7, 40}, {-63.0, 128}, {-66.7, 33}}},
  };
  static const std::vector<std::string> kOrder = {"echo", "llep", "lplb", "taot-paper"};
  const auto row = kTable.find({ep, initial});
  const auto col = std::find(kOrder.begin(), kOrder.end(), planner);
  if (row == kTable.end() || col == kOrder.end()) return std::nullopt;
  return row->second[static_cast<size_t>(col - kOrder.begin())];
}

absl::Status Table1(Context ctx) {
  // One microbatch per step and a static load, like the paper's single-matrix figures.
  ctx.base.workload.steps = 1;
  ctx.base.workload.microbatches = 1;
  ctx.base.workload.drift = 1;
  ctx.base.workload.burst_rate = 0;
  Csv csv({"ep", "initial_pct", "planner", "imbalance_before_pct", "imbalance_after_pct", "improvement_pp",
           "weighted_cost", "transfers_intra", "transfers_inter", "step_time_ms", "speedup", "paper_improvement_pp",
           "paper_weighted_cost"});
  const std::vector<int> eps = {16, 32};
  const std::vector<int> initials = ctx.Pick<std::vector<int>>({10, 30, 50, 70}, {30, 70});
  const std::vector<PlannerSpec> planners = AllPlanners(ctx.registry());
  Progress progress(ctx.name, static_cast<int>(eps.size() * initials.size() * planners.size()), ctx.options.progress);
  for (int ep : eps) {
    for (int initial : initials) {
      Scenario sc = ctx.base;
      sc.ranks = ep;
      sc.workload.imbalance = initial / 100.0;
      absl::StatusOr<Results> results =
          RunPoint(ctx.registry(), sc, planners, absl::StrCat("EP", ep, " ", initial, "%"), progress);
      if (!results.ok()) return results.status();
      const SimResult& none = *Find(*results, "none");
      for (const auto& [spec, r] : *results) {
        const std::optional<PaperFigure> paper = PaperTable1(ep, initial, spec.label);
        csv.Add({absl::StrCat(ep), absl::StrCat(initial), spec.label, Num(r.imbalance_before_pct),
                 Num(r.imbalance_after_pct), Num(r.imbalance_after_pct - r.imbalance_before_pct),
                 Num(r.plan_weighted_cost), Num(r.plan_transfers_intra), Num(r.plan_transfers_inter), Num(r.step_ms),
                 Num(none.step_ms / r.step_ms), paper ? Num(paper->improvement_pp) : "",
                 paper ? Num(paper->weighted_cost) : ""});
      }
    }
  }
  return Finish(
      ctx, csv, "The paper's Table 1: balance and transfer cost per plan",
      "Per plan (one layer of one microbatch, no resident replicas), averaged over the simulated layers: "
      "the imbalance improvement in percentage points and the weighted transfer cost (intra-node transfers "
      "+ lambda x inter-node ones), K = 2, lambda = 3, beside the figures the TAOT paper reports (its TAOT is "
      "our taot-paper). The paper does not publish how it generated its loads, so the figures compare in "
      "kind, not digit for digit. step_time_ms is the modelled step with one microbatch.");
}

absl::Status Overhead(const Context& ctx) {
  Csv csv({"ep", "planner", "plan_time_us", "forward_time_ms", "overhead_pct"});
  const std::vector<int> eps = ctx.Pick<std::vector<int>>({16, 32, 64, 128}, {16, 32});
  std::vector<PlannerSpec> planners = AllPlanners(ctx.registry());
  std::erase_if(planners, [](const PlannerSpec& p) { return p.name == "none"; });  // it plans nothing
  planners.push_back(AutoPlanner(ctx.base));
  Progress progress(ctx.name, static_cast<int>(eps.size() * planners.size()), ctx.options.progress);
  for (int ep : eps) {
    Scenario sc = ctx.base;
    sc.ranks = ep;
    planners.back() = AutoPlanner(sc);
    absl::StatusOr<Results> results = RunPoint(ctx.registry(), sc, planners, absl::StrCat("EP", ep), progress);
    if (!results.ok()) return results.status();
    for (const auto& [spec, r] : *results) {
      const double layers_us = r.plan_time_us * sc.model.moe_layers;
      csv.Add({absl::StrCat(ep), spec.label, Num(r.plan_time_us), Num(r.forward_ms),
               Num(100 * layers_us / (r.forward_ms * 1e3))});
    }
  }
  return Finish(ctx, csv, "Planning time against the forward pass",
                "The median time of one planning stage on this machine (the real planner, measured, with what local "
                "planning runs around it: the request checked, the plan made canonical and checked, then hashed as "
                "each rank's client does for the plan's identity) and the share of "
                "one microbatch's modelled forward pass it takes when it runs on the critical path of every MoE layer "
                "(local planning: plan time x MoE layers / forward time). taot-auto plans at several candidate targets "
                "and models each, so it costs a multiple of taot.");
}

// Predictive mode's prefetches: their move time per step and the share of it hidden behind the
// forward pass of earlier layers ("" where nothing is prefetched).
std::vector<std::string> PrefetchCells(const SimResult& r) {
  if (r.prefetch_ms <= 0) return {"", ""};
  return {Num(r.prefetch_ms), Num(100.0 * (1.0 - r.prefetch_exposed_ms / r.prefetch_ms))};
}

absl::Status Modes(const Context& ctx) {
  std::vector<std::string> header = {"ep", "mode"};
  header.insert(header.end(), kStepColumns.begin(), kStepColumns.end());
  header.insert(header.end(), {"prefetch_ms", "prefetch_hidden_pct"});
  Csv csv(header);
  const std::vector<int> eps = ctx.Pick<std::vector<int>>({16, 32, 64}, {16});
  const std::vector<PlanningMode> modes = {PlanningMode::kRemote, PlanningMode::kPredictive, PlanningMode::kLocal};
  Progress progress(ctx.name, static_cast<int>(eps.size() * (modes.size() + 1)), ctx.options.progress);
  for (int ep : eps) {
    Scenario sc = ctx.base;
    sc.ranks = ep;
    absl::StatusOr<Results> none =
        RunPoint(ctx.registry(), sc, {{"none", "none", {}}}, absl::StrCat("EP", ep), progress);
    if (!none.ok()) return none.status();
    const SimResult& base = none->front().second;
    std::vector<std::string> row = {absl::StrCat(ep), "none"};
    for (std::string& cell : StepCells(base, base)) row.push_back(std::move(cell));
    for (std::string& cell : PrefetchCells(base)) row.push_back(std::move(cell));
    csv.Add(std::move(row));
    for (PlanningMode mode : modes) {
      sc.mode = mode;
      absl::StatusOr<Results> r = RunPoint(ctx.registry(), sc, {{"taot", "taot", {}}},
                                           absl::StrCat("EP", ep, " ", PlanningModeName(mode)), progress);
      if (!r.ok()) return r.status();
      row = {absl::StrCat(ep), PlanningModeName(mode)};
      for (std::string& cell : StepCells(r->front().second, base)) row.push_back(std::move(cell));
      for (std::string& cell : PrefetchCells(r->front().second)) row.push_back(std::move(cell));
      csv.Add(std::move(row));
    }
  }
  return Finish(ctx, csv, "Where planning runs: remote, predictive, local",
                "taot planning in each mode on a temporally correlated workload (popularity drifts from step to "
                "step, with bursts). remote: the planner plus a gRPC round trip on the critical path of every layer. "
                "local: the planner in-process on every rank. predictive: replicas placed from the previous step's "
                "loads and their weights prefetched: a layer's moves start after the optimizer step and hide behind "
                "the forward pass of the layers before it; what they outlast stalls the layer (prefetch_ms: the "
                "moves' time per step, prefetch_hidden_pct: the share hidden). At the layer only the split over "
                "those replicas runs, so the balance is what the prediction allows.");
}

// A frontier scenario: a name and how it changes the base.
struct FrontierCase {
  std::string name;
  std::string model, cluster;
  int ranks;
  double imbalance;
};

absl::Status Frontier(const Context& ctx) {
  Csv csv({"scenario", "target", "step_time_ms", "speedup", "imbalance_after_pct", "transfers_intra", "transfers_inter",
           "stall_ms", "chosen_target_pct", "plan_ms"});
  std::vector<FrontierCase> cases = {{"qwen3 EP16 h800 50%", "qwen3-30b-a3b", "h800", 16, 0.5},
                                     {"qwen3 EP32 h800 70%", "qwen3-30b-a3b", "h800", 32, 0.7},
                                     {"qwen3 EP64 h100 30%", "qwen3-30b-a3b", "h100", 64, 0.3},
                                     {"deepseek-v3 EP64 h800 50%", "deepseek-v3", "h800", 64, 0.5}};
  const std::vector<double> targets = ctx.Pick<std::vector<double>>({0, 1, 2, 3, 5, 7.5, 10, 15, 20}, {0, 2, 10});
  if (ctx.options.quick) cases.resize(2);
  Progress progress(ctx.name, static_cast<int>(cases.size() * (targets.size() + 3)), ctx.options.progress);
  for (const FrontierCase& fc : cases) {
    Scenario sc = ctx.base;
    sc.model = *ModelPreset(fc.model);
    sc.cluster = *ClusterPreset(fc.cluster);
    sc.cluster_name = fc.cluster;
    sc.ranks = fc.ranks;
    sc.workload.imbalance = fc.imbalance;
    sc.workload.layers = ctx.options.quick ? ctx.base.workload.layers : sc.model.moe_layers;
    std::vector<PlannerSpec> planners = {{"none", "none", {}}};
    for (double t : targets) planners.push_back(FixedTarget(t));
    planners.push_back(AutoPlanner(sc));
    planners.push_back(AutoPlanner(sc));
    planners.back().label = "taot-auto-step";
    planners.back().reuse_chosen_target = true;
    absl::StatusOr<Results> results = RunPoint(ctx.registry(), sc, planners, fc.name, progress);
    if (!results.ok()) return results.status();
    const SimResult& none = results->front().second;
    for (size_t i = 1; i < results->size(); ++i) {
      const SimResult& r = (*results)[i].second;
      const std::string& label = (*results)[i].first.label;
      const bool automatic = label != "taot";
      csv.Add({fc.name, automatic ? label.substr(std::string("taot-").size()) : Num(targets[i - 1]), Num(r.step_ms),
               Num(none.step_ms / r.step_ms), Num(r.imbalance_after_pct), Num(r.transfers_intra),
               Num(r.transfers_inter), Num(r.stall_ms), automatic ? Num(r.chosen_target_pct) : "", Num(r.plan_ms)});
    }
  }
  return Finish(ctx, csv, "Step time against taot's target residual imbalance",
                "taot at fixed targets from 0 to 20% and with target_imbalance_pct=auto (which plans at candidate "
                "targets and keeps the plan with the least modelled layer time on the scenario's cluster and model), "
                "per scenario. Balance saves GEMM time on the busiest rank; every replica costs a weight transfer that "
                "may outlast the home GEMMs, and planning time. Planning is local, on the critical path. auto searches "
                "at every microbatch (several plans, each modelled: plan_ms shows what that costs); auto-step searches "
                "at the first microbatch of each step and layer and plans the step's later microbatches at the target "
                "it chose (Scenario::reuse_chosen_target), which is how to deploy it where planning is on the "
                "critical path.",
                {{"scenarios", "model, cluster, EP and initial imbalance as each line's name says"},
                 {"guest slots K", absl::StrCat(ctx.base.slots_per_rank)},
                 {"planning", PlanningModeName(ctx.base.mode)},
                 {"workload", absl::StrCat(ctx.options.quick ? absl::StrCat(ctx.base.workload.layers, " layers")
                                                             : std::string("all the model's layers"),
                                           ", ", ctx.base.workload.steps, " steps (first is warm-up) x ",
                                           ctx.base.workload.microbatches, " microbatches; drift ",
                                           Num(ctx.base.workload.drift), ", burst rate ",
                                           Num(ctx.base.workload.burst_rate), ", seed ", ctx.base.workload.seed)}});
}

absl::Status UnknownExperiment(const std::string& name) {
  return absl::NotFoundError(
      absl::StrCat("unknown experiment '", name, "' (known: ", absl::StrJoin(ExperimentNames(), ", "), ")"));
}

absl::Status Dispatch(const Context& ctx) {
  const std::string& n = ctx.name;
  if (n == "table1") return Table1(ctx);
  if (n == "overhead") return Overhead(ctx);
  if (n == "modes") return Modes(ctx);
  if (n == "frontier") return Frontier(ctx);
  if (n == "imbalance") {
    return StepSweep<int>(
        ctx, "initial_pct", ctx.Pick<std::vector<int>>({30, 50, 70, 90}, {30, 70}),
        [](Scenario& sc, int v) { sc.workload.imbalance = v / 100.0; }, "Speedup against the initial imbalance",
        "Modelled speedup of one optimizer step over no replication, per planner, as the initial imbalance of every "
        "layer grows (EP and K as in the scenario).");
  }
  if (n == "scale") {
    return StepSweep<int>(
        ctx, "ep", ctx.Pick<std::vector<int>>({4, 8, 16, 32, 64, 128}, {8, 16, 32}),
        [](Scenario& sc, int v) { sc.ranks = v; }, "Speedup against expert-parallel size",
        "Modelled speedup over no replication as the expert-parallel group grows, 8 GPUs per node (EP4 is one "
        "half-populated node). The experts stay the model's, so each rank holds fewer as EP grows.");
  }
  if (n == "slots") {
    return StepSweep<int>(
        ctx, "slots", ctx.Pick<std::vector<int>>({1, 2, 4, 8, 16}, {1, 2, 4}),
        [](Scenario& sc, int v) { sc.slots_per_rank = v; }, "Speedup against guest slots per rank",
        "Modelled speedup over no replication with K guest slots per rank and layer (the memory each rank lends "
        "to hot experts).");
  }
  return UnknownExperiment(n);
}

}  // namespace

const std::vector<std::string>& ExperimentNames() {
  static const std::vector<std::string> kNames = {"table1",   "imbalance", "scale",   "slots",
                                                  "overhead", "modes",     "frontier"};
  return kNames;
}

absl::Status RunExperiment(const std::string& name, const ExperimentOptions& options) {
  if (std::find(ExperimentNames().begin(), ExperimentNames().end(), name) == ExperimentNames().end()) {
    return UnknownExperiment(name);
  }
  if (!options.base.trace.empty()) {
    return absl::InvalidArgumentError(
        "workload.trace: the experiments sweep synthetic workloads; replay a trace with `taot-sim simulate`");
  }
  for (const char* needed : {"none", "taot"}) {
    if (absl::Status s = options.planners->Describe(needed).status(); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("planners: the experiments need '", needed, "': ", s.message()));
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(options.out_dir, ec);
  if (ec) return absl::InternalError(absl::StrCat(options.out_dir, ": cannot create: ", ec.message()));
  return Dispatch(Context{options, name, BaseScenario(options)});
}

absl::Status RunReport(const ExperimentOptions& options, const std::string& doc) {
  for (const std::string& name : ExperimentNames()) {
    if (absl::Status s = RunExperiment(name, options); !s.ok()) return s;
  }
  const std::string cmd = absl::StrCat("'", options.python, "' '", options.report_dir, "/report.py' --data '",
                                       options.out_dir, "' --doc '", doc, "'", options.quick ? " --quick" : "");
  if (const int rc = std::system(cmd.c_str()); rc != 0) {
    return absl::InternalError(absl::StrCat("report.py failed (status ", rc, ")"));
  }
  return absl::OkStatus();
}

}  // namespace taot::sim

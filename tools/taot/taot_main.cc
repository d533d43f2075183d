// `taot`: plan a load matrix from a file, compare the planners, generate cases.
// Every error is one line on stderr and a non-zero exit (2 for bad input, 1 for a failure); no
// output file is touched on error.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "compare_table.h"
#include "taot/planner/case_json.h"
#include "taot/planner/plan_json.h"
#include "taot/planner/plan_validator.h"
#include "taot/planner/registry.h"
#include "taot/planner/run_planner.h"
#include "taot/sim/case_generator.h"
#include "taot/tools/cli_support.h"
#include "taot/tools/parse_or_exit.h"

namespace taot::cli {
namespace {

// Writes through a temporary file and a rename, so an existing file is never left half
// written.
// Whether an --output names a file (not standard output).
bool ToFile(const std::string& path) { return !path.empty() && path != "-"; }

absl::Status WriteAll(const std::string& path, const std::string& text) {
  if (!ToFile(path)) {
    std::cout << text;
    return absl::OkStatus();
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out || !(out << text) || !out.flush()) {
      std::remove(tmp.c_str());
      return absl::PermissionDeniedError(absl::StrCat(path, ": cannot write"));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return absl::PermissionDeniedError(absl::StrCat(path, ": cannot replace"));
  }
  return absl::OkStatus();
}

absl::StatusOr<PlanRequest> LoadCase(const std::string& path, std::optional<double> target) {
  absl::StatusOr<std::string> text = ReadJsonFile(path);
  if (!text.ok()) return text.status();
  absl::StatusOr<PlanRequest> request = ParseCase(*text);
  if (!request.ok()) {
    return absl::Status(request.status().code(),
                        absl::StrCat(path == "-" ? "stdin" : path, ": ", request.status().message()));
  }
  if (target) {
    request->target_imbalance_pct = *target;
    if (absl::Status s = ValidateRequest(*request); !s.ok()) return s;
  }
  return request;
}

absl::StatusOr<PlannerParams> ParseParams(const std::vector<std::string>& items) {
  PlannerParams params;
  for (const std::string& item : items) {
    std::vector<std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    if (kv.size() != 2 || kv[0].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--param: expected key=value, got '", item, "'"));
    }
    params[kv[0]] = kv[1];
  }
  return params;
}

absl::StatusOr<ScoredPlan> PlanWith(const std::string& name, const PlannerParams& params, const PlanRequest& request) {
  absl::StatusOr<std::unique_ptr<Planner>> planner = PlannerRegistry::BuiltIn().Create(name, params);
  if (!planner.ok()) return planner.status();
  return RunPlanner(**planner, request);
}

struct PlanArgs {
  std::string input, output, planner = std::string(kDefaultPlanner);
  std::vector<std::string> params;
  std::optional<double> target;
};

absl::Status RunPlan(const PlanArgs& a) {
  absl::StatusOr<PlannerParams> params = ParseParams(a.params);
  if (!params.ok()) return params.status();
  absl::StatusOr<PlanRequest> request = LoadCase(a.input, a.target);
  if (!request.ok()) return request.status();
  absl::StatusOr<ScoredPlan> result = PlanWith(a.planner, *params, *request);
  if (!result.ok()) return result.status();
  if (absl::Status s = WriteAll(a.output, PlanToJson(a.planner, result->plan, result->score)); !s.ok()) return s;
  if (ToFile(a.output)) {
    const Scorecard& c = result->score;
    std::cout << absl::StrFormat(
        "wrote the PLAN to %s: %s, %d replicas, imbalance %.1f%% -> %.1f%% (target %g%%, %s), weighted cost %g\n",
        a.output, a.planner, result->plan.replicas.size(), c.imbalance_before_pct, c.imbalance_after_pct,
        c.target_imbalance_pct, c.target_met ? "met" : "not met", c.weighted_cost);
  }
  return absl::OkStatus();
}

struct CompareArgs {
  std::string input;
  std::vector<std::string> planners;
  std::optional<double> target;
  bool json = false;
};

absl::Status RunCompareOn(const PlanRequest& request, std::vector<std::string> planners, bool json) {
  if (planners.empty()) planners = PlannerRegistry::BuiltIn().names();
  std::vector<CompareRow> rows;
  for (const std::string& name : planners) {
    absl::StatusOr<ScoredPlan> result = PlanWith(name, {}, request);
    if (!result.ok()) return result.status();
    rows.push_back({name, result->score});
  }
  std::cout << (json ? FormatCompareJsonLines(rows) : FormatCompareTable(rows));
  return absl::OkStatus();
}

absl::Status RunCompare(const CompareArgs& a) {
  absl::StatusOr<PlanRequest> request = LoadCase(a.input, a.target);
  if (!request.ok()) return request.status();
  return RunCompareOn(*request, a.planners, a.json);
}

struct ScoreArgs {
  std::string input, plan;
  bool lift_slot_limit = false;
  bool json = false;
  bool print_plan = false;
};

absl::Status RunScore(const ScoreArgs& a) {
  absl::StatusOr<PlanRequest> request = LoadCase(a.input, std::nullopt);
  if (!request.ok()) return request.status();
  absl::StatusOr<std::string> text = ReadJsonFile(a.plan);
  if (!text.ok()) return text.status();
  absl::StatusOr<Plan> plan = ParsePlan(*text);
  if (!plan.ok()) return absl::InvalidArgumentError(absl::StrCat(a.plan, ": ", plan.status().message()));
  const SlotLimit limit = a.lift_slot_limit ? SlotLimit::kLifted : SlotLimit::kEnforced;
  if (absl::Status s = ValidatePlan(*request, *plan, limit); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(a.plan, ": ", s.message()));
  }
  Canonicalize(*plan);
  const Scorecard score = Score(*request, *plan, 0);
  if (a.print_plan) {
    std::cout << PlanToJson("external", *plan, score);
  } else {
    const std::vector<CompareRow> row = {{a.plan, score}};
    std::cout << (a.json ? FormatCompareJsonLines(row) : FormatCompareTable(row));
  }
  return absl::OkStatus();
}

struct GenArgs {
  sim::CaseOptions options;
  std::optional<double> imbalance;
  std::string output;
};

absl::Status RunGen(GenArgs a) {
  a.options.imbalance = a.imbalance;
  absl::StatusOr<sim::GeneratedCase> g = sim::GenerateCase(a.options);
  if (!g.ok()) return g.status();
  if (absl::Status s = WriteAll(a.output, CaseToJson(g->request, sim::CaseMetaJson(a.options, *g))); !s.ok()) {
    return s;
  }
  if (ToFile(a.output)) {
    std::cout << absl::StrFormat("wrote the CASE to %s: %d ranks (%d per node), %d experts, K %d, imbalance %.1f%%\n",
                                 a.output, a.options.ranks, a.options.ranks_per_node, a.options.experts,
                                 g->request.slots_per_rank(), g->imbalance_pct);
  }
  return absl::OkStatus();
}

absl::Status RunPlanners() {
  for (const std::string& name : PlannerRegistry::BuiltIn().names()) {
    const PlannerInfo info = *PlannerRegistry::BuiltIn().Describe(name);
    std::cout << info.name << (info.name == kDefaultPlanner ? " (default)" : "") << "\n  " << info.summary << "\n";
    for (const std::string& p : info.params) std::cout << "    --param " << p << "\n";
  }
  return absl::OkStatus();
}

absl::Status RunDemo(int ranks, double imbalance, uint64_t seed) {
  sim::CaseOptions o;
  o.ranks = ranks;
  o.experts = ranks * 8;
  o.imbalance = imbalance;
  o.seed = seed;
  absl::StatusOr<sim::GeneratedCase> g = sim::GenerateCase(o);
  if (!g.ok()) return g.status();
  std::cout << "taot demo: EP" << ranks << ", " << o.experts << " experts, K = " << o.slots_per_rank << ", "
            << o.ranks_per_node << " ranks per node, inter-node cost " << o.inter_node_cost << ", initial imbalance "
            << g->imbalance_pct << "% (taot gen --ranks " << ranks << " --experts " << o.experts << " --imbalance "
            << imbalance << " --seed " << seed << ")\n\n";
  return RunCompareOn(g->request, {}, /*json=*/false);
}

// The ranges every request allows (plan_request.h); what depends on other flags (experts a
// multiple of ranks, top-k at most experts) GenerateCase checks, naming the flag too.
void AddGenOptions(CLI::App& cmd, GenArgs& a) {
  sim::CaseOptions& o = a.options;
  cmd.add_option("--ranks", o.ranks, "Ranks (EP size)")->required()->check(InRange(1, kMaxRanks));
  cmd.add_option("--experts", o.experts, "Experts (a multiple of --ranks)")->required()->check(InRange(1, kMaxExperts));
  cmd.add_option("--imbalance", a.imbalance,
                 "Initial imbalance to hit, a fraction or a percentage (0.7 or 70%: the busiest rank at 1.7x the "
                 "mean)")
      ->transform(PercentAccepted(ImbalanceUnit::kFraction))
      ->check(InRange(0, kMaxRanks - 1));
  cmd.add_option("--seed", o.seed, "Random seed")->capture_default_str()->check(InRange(0, 0x1p64, "[0, 2^64)"));
  cmd.add_option("--top-k", o.top_k, "Experts each token is routed to")
      ->capture_default_str()
      ->check(InRange(1, kMaxExperts));
  cmd.add_option("--tokens-per-rank", o.tokens_per_rank, "Tokens per rank per microbatch")
      ->capture_default_str()
      ->check(InRange(1, 0x1p30, "[1, 2^30]"));
  cmd.add_option("--slots", o.slots_per_rank, "Guest slots per rank (K)")
      ->capture_default_str()
      ->check(InRange(0, kMaxExperts));
  cmd.add_option("--ranks-per-node", o.ranks_per_node, "Ranks per node")
      ->capture_default_str()
      ->check(InRange(1, kMaxRanks));
  cmd.add_option("--inter-node-cost", o.inter_node_cost, "Cost of a cross-node transfer (λ)")
      ->capture_default_str()
      ->check(InRange(kIntraNodeCost, 1e6));
  cmd.add_option("--expert-bytes", o.expert_bytes, "Bytes of one expert's weights")
      ->capture_default_str()
      ->check(InRange(0, 0x1p50, "[0, 2^50]"));
  cmd.add_option("--noise", o.noise, "Per-source log-normal noise")->capture_default_str()->check(InRange(0, 5));
  cmd.add_option("--skew", o.skew, "Popularity skew when --imbalance is not given")
      ->capture_default_str()
      ->check(InRange(0, 20));
  cmd.add_option("--hot-experts", o.hot_experts, "Experts made --hot-factor times hotter (a burst)")
      ->capture_default_str()
      ->check(InRange(0, kMaxExperts));
  cmd.add_option("--hot-factor", o.hot_factor, "How much hotter the burst experts are")
      ->capture_default_str()
      ->check(InRange(1, 1e6));
  cmd.add_option("--target-imbalance", o.target_imbalance_pct,
                 "Store a target residual imbalance in the case, in percent (2 or 2%)")
      ->transform(PercentAccepted(ImbalanceUnit::kPercent))
      ->check(InRange(0, 1e6));
  cmd.add_option("--output,-o", a.output, "Write the CASE here (default: stdout)");
}

int Main(int argc, char** argv) {
  CLI::App app{"taot: topology-aware expert replica planning for MoE training"};
  app.require_subcommand(1);
  absl::Status status;

  PlanArgs plan;
  CLI::App* plan_cmd = app.add_subcommand("plan", "Plan one CASE and write the PLAN");
  plan_cmd->add_option("--input,-i", plan.input, "CASE file ('-' for stdin)")->required();
  plan_cmd->add_option("--planner,-p", plan.planner, "Planner name (see `taot planners`)")->capture_default_str();
  plan_cmd->add_option("--param", plan.params, "Planner parameter key=value (repeatable)");
  plan_cmd
      ->add_option("--target-imbalance", plan.target,
                   "Target residual imbalance in percent, 2 or 2% (overrides the CASE)")
      ->transform(PercentAccepted(ImbalanceUnit::kPercent))
      ->check(InRange(0, 1e6));
  plan_cmd->add_option("--output,-o", plan.output, "Write the PLAN here (default: stdout)");
  plan_cmd->callback([&] { status = RunPlan(plan); });

  CompareArgs compare;
  CLI::App* compare_cmd = app.add_subcommand("compare", "Run every planner on one CASE and print the scorecards");
  compare_cmd->add_option("--input,-i", compare.input, "CASE file ('-' for stdin)")->required();
  compare_cmd->add_option("--planners", compare.planners, "Planners to run (default: all)")->delimiter(',');
  compare_cmd
      ->add_option("--target-imbalance", compare.target,
                   "Target residual imbalance in percent, 2 or 2% (overrides the CASE)")
      ->transform(PercentAccepted(ImbalanceUnit::kPercent))
      ->check(InRange(0, 1e6));
  compare_cmd->add_flag("--json", compare.json, "One JSON object per planner per line: {\"planner\", \"stats\"}");
  compare_cmd->callback([&] { status = RunCompare(compare); });

  ScoreArgs score;
  CLI::App* score_cmd = app.add_subcommand("score", "Validate and score a PLAN made elsewhere");
  score_cmd->add_option("--input,-i", score.input, "CASE file")->required();
  score_cmd->add_option("--plan", score.plan, "PLAN file")->required();
  score_cmd->add_flag("--lift-slot-limit", score.lift_slot_limit,
                      "Accept more than K replicas on a rank (a comparison-only planner's plan, e.g. eplb's)");
  score_cmd->add_flag("--json", score.json, "The scorecard as one JSON line ({\"planner\": PLAN, \"stats\": {...}})");
  score_cmd->add_flag("--print-plan", score.print_plan, "Print the whole PLAN, canonicalised, with its stats")
      ->excludes("--json");
  score_cmd->callback([&] { status = RunScore(score); });

  GenArgs gen;
  CLI::App* gen_cmd = app.add_subcommand("gen", "Generate a CASE with a chosen initial imbalance");
  AddGenOptions(*gen_cmd, gen);
  gen_cmd->callback([&] { status = RunGen(gen); });

  CLI::App* planners_cmd = app.add_subcommand("planners", "List the planners and their parameters");
  planners_cmd->callback([&] { status = RunPlanners(); });

  int demo_ranks = 32;
  double demo_imbalance = 0.7;
  uint64_t demo_seed = 1;
  CLI::App* demo_cmd = app.add_subcommand("demo", "Generate a skewed case and compare every planner on it");
  // 8 experts per rank, within the load limit up to 1024 ranks.
  demo_cmd->add_option("--ranks", demo_ranks, "Ranks (EP size)")->capture_default_str()->check(InRange(1, 1024));
  demo_cmd->add_option("--imbalance", demo_imbalance, "Initial imbalance, a fraction or a percentage (0.7 or 70%)")
      ->capture_default_str()
      ->transform(PercentAccepted(ImbalanceUnit::kFraction))
      ->check(InRange(0, 1023));
  demo_cmd->add_option("--seed", demo_seed, "Random seed")
      ->capture_default_str()
      ->check(InRange(0, 0x1p64, "[0, 2^64)"));
  demo_cmd->callback([&] { status = RunDemo(demo_ranks, demo_imbalance, demo_seed); });

  if (const std::optional<int> code = ParseOrExit(app, argc, argv, "taot")) return *code;
  if (!status.ok()) std::cerr << "taot: error: " << status.message() << "\n";
  return ExitCodeOf(status);
}

}  // namespace
}  // namespace taot::cli

int main(int argc, char** argv) {
  return taot::cli::ExitOnException("taot", [&] { return taot::cli::Main(argc, argv); });
}

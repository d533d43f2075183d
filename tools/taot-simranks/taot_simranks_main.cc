// taot-simranks: simulated ranks for a running taot-planner. R real clients (taot::client, one
// thread each, their collectives over the in-process transport) register with their node names
// and report every (step, layer, microbatch)'s load row from a taot-sim workload (drifting hot
// experts with bursts) to the daemon; the plans come back, and per layer it prints the
// imbalance before and after and the cross-node traffic, checks that every rank got the same
// plan, and ends with the plan latencies.
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "round_report.h"
#include "simulated_ranks.h"
#include "taot/sim/sequence_workload.h"
#include "taot/tools/cli_support.h"
#include "taot/tools/parse_or_exit.h"

namespace taot::simranks {
namespace {

int Fail(const std::string& what) {
  std::cerr << "taot-simranks: error: " << what << "\n";
  return 1;
}

int Main(int argc, char** argv) {
  CLI::App app{"taot-simranks: simulated ranks that register with a taot-planner and plan every layer"};
  SimRanksOptions o;
  sim::SequenceOptions w;
  w.layers = 4;
  w.steps = 5;
  w.microbatches = 1;
  int timeout_s = 30;
  app.add_option("--address", o.address, "The daemon's address")->capture_default_str();
  app.add_option("--job-id", o.job_id, "The job the daemon serves")->required();
  app.add_option("--world-size", w.ranks, "Ranks to simulate")->capture_default_str();
  app.add_option("--experts", w.experts, "Experts per layer")->capture_default_str();
  app.add_option("--slots", o.slots_per_rank, "Guest slots per rank, K (the daemon's --slots)")->capture_default_str();
  app.add_option("--ranks-per-node", o.ranks_per_node, "Ranks per node (node names node-0, node-1, ...)")
      ->capture_default_str()
      ->check(cli::InRange(1, 1 << 20));
  app.add_option("--layers", w.layers, "MoE layers")->capture_default_str();
  app.add_option("--steps", w.steps, "Steps")->capture_default_str();
  app.add_option("--microbatches", w.microbatches, "Microbatches per step")->capture_default_str();
  app.add_option("--imbalance", w.imbalance, "Initial imbalance, a fraction or a percentage (0.5 or 50%)")
      ->capture_default_str()
      ->transform(cli::PercentAccepted(cli::ImbalanceUnit::kFraction))
      ->check(cli::InRange(0, 1023));
  app.add_option("--seed", w.seed, "Workload seed")->capture_default_str();
  app.add_option("--token", o.token, "The job token, if the daemon requires one");
  app.add_option("--timeout-s", timeout_s, "Deadline of each call")->capture_default_str();
  if (const std::optional<int> code = cli::ParseOrExit(app, argc, argv, "taot-simranks")) return *code;
  o.call_timeout = absl::Seconds(timeout_s);
  absl::StatusOr<std::unique_ptr<sim::SequenceWorkload>> workload = sim::SequenceWorkload::Create(w);
  if (!workload.ok()) {
    std::cerr << "taot-simranks: error: " << workload.status().message() << "\n";
    return 2;
  }
  absl::StatusOr<std::shared_ptr<const Problem>> problem =
      SimulatedProblem(w.ranks, w.experts, o.ranks_per_node, o.slots_per_rank);
  if (!problem.ok()) {
    std::cerr << "taot-simranks: error: " << problem.status().message() << "\n";
    return 2;
  }
  SimulatedRanks ranks(o, **workload);
  const absl::Status run = ranks.Run([&](int64_t step, int layer, const client::LayerPlan& plan) {
    const Scorecard score = ScoreRound(*problem, (*workload)->Load(static_cast<int>(step), layer, 0), plan.plan);
    std::printf("%s\n", FormatRound(step, layer, score, plan).c_str());
    std::fflush(stdout);
  });
  if (!run.ok()) return Fail(std::string(run.message()));
  std::printf("%s\n", FormatSummary(ranks.Summarize()).c_str());
  if (ranks.local_layers() > 0) {
    return Fail(absl::StrCat(ranks.local_layers(), " layer(s) were planned locally, not by the daemon at ", o.address,
                             " (the clients' lines above say why)"));
  }
  return 0;
}

}  // namespace
}  // namespace taot::simranks

int main(int argc, char** argv) {
  return taot::cli::ExitOnException("taot-simranks", [&] { return taot::simranks::Main(argc, argv); });
}

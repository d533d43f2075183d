// taot-simranks's ranks against a real daemon on loopback (the service in process), and against
// none.
#include "simulated_ranks.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <string>

#include "loopback_daemon.h"
#include "round_report.h"
#include "taot/server/job.h"
#include "taot/sim/sequence_workload.h"

namespace taot::simranks {
namespace {

constexpr int kRanks = 4;
constexpr int kExperts = 16;

std::unique_ptr<server::testing::LoopbackDaemon> StartDaemon(int slots_per_rank = 2) {
  server::JobConfig config;
  config.job_id = "job";
  config.world_size = kRanks;
  config.experts = kExperts;
  config.slots_per_rank = slots_per_rank;
  config.round_timeout = absl::Seconds(5);  // 2 busy cores: no round may miss a row
  server::testing::LoopbackDaemonOptions options;
  options.shutdown_grace = absl::ZeroDuration();
  return server::testing::LoopbackDaemon::ForJob(config, options);
}

std::unique_ptr<sim::SequenceWorkload> Workload(int microbatches = 1) {
  sim::SequenceOptions w;
  w.ranks = kRanks;
  w.experts = kExperts;
  w.top_k = 2;
  w.tokens_per_rank = 512;
  w.layers = 2;
  w.steps = 2;
  w.microbatches = microbatches;
  w.imbalance = 0.7;
  return *sim::SequenceWorkload::Create(w);
}

SimRanksOptions Options(const std::string& address) {
  SimRanksOptions o;
  o.address = address;
  o.job_id = "job";
  o.ranks_per_node = 2;
  o.call_timeout = absl::Seconds(20);
  return o;
}

TEST(SimulatedRanksTest, EveryRankGetsTheDaemonsPlanOfEveryRound) {
  const auto daemon = StartDaemon();
  const auto workload = Workload();
  SimulatedRanks ranks(Options(daemon->address()), *workload);
  std::vector<std::pair<int64_t, int>> seen;
  std::map<std::pair<int64_t, int>, client::LayerPlan> plans;
  ASSERT_TRUE(ranks
                  .Run([&](int64_t step, int layer, const client::LayerPlan& plan) {
                    seen.emplace_back(step, layer);
                    plans[{step, layer}] = plan;
                  })
                  .ok());
  EXPECT_EQ(seen, (std::vector<std::pair<int64_t, int>>{{0, 0}, {0, 1}, {1, 0}, {1, 1}}));
  for (const auto& [key, plan] : plans)
    EXPECT_EQ(plan.identity.provenance, Provenance::kDaemonRound) << plan.identity.reason;
  const Summary s = ranks.Summarize();
  EXPECT_EQ(s.rounds, 4);
  EXPECT_EQ(s.ranks, kRanks);
  EXPECT_EQ(s.fallback_rounds, 0);
  EXPECT_EQ(s.mismatched, 0);
  EXPECT_GT(s.p99_us, 0);
  EXPECT_EQ(ranks.local_layers(), 0);
  // Registered as node-0, node-0, node-1, node-1.
  const server::JobStatus status = daemon->job().Status();
  EXPECT_EQ(status.registered, kRanks);
  EXPECT_EQ(status.nodes, 2);
  // The figures printed are the daemon's own scorecard of the same plan.
  ASSERT_EQ(status.recent.size(), 4u);
  const std::shared_ptr<const Problem> problem = *SimulatedProblem(kRanks, kExperts, 2, 2);
  for (const auto& round : status.recent) {
    const client::LayerPlan& plan = plans.at({round->key.step, round->key.layer});
    EXPECT_EQ(plan.identity.hash, round->identity.hash);
    const Scorecard score =
        ScoreRound(problem, workload->Load(static_cast<int>(round->key.step), round->key.layer, 0), plan.plan);
    EXPECT_EQ(score.imbalance_before_pct, round->score.imbalance_before_pct);
    EXPECT_EQ(score.imbalance_after_pct, round->score.imbalance_after_pct);
    EXPECT_EQ(score.intra_node_transfers, round->score.intra_node_transfers);
    EXPECT_EQ(score.inter_node_transfers, round->score.inter_node_transfers);
    EXPECT_EQ(score.tokens_inter_node, round->score.tokens_inter_node);
  }
}

TEST(SimulatedRanksTest, MicrobatchesAreRoundsOfTheirOwnAndOneLinePerLayerIsShown) {
  const auto daemon = StartDaemon();
  const auto workload = Workload(/*microbatches=*/2);
  SimulatedRanks ranks(Options(daemon->address()), *workload);
  int shown = 0;
  ASSERT_TRUE(ranks.Run([&](int64_t, int, const client::LayerPlan&) { ++shown; }).ok());
  EXPECT_EQ(shown, 4);
  EXPECT_EQ(ranks.Summarize().rounds, 8);
  EXPECT_EQ(ranks.Summarize().fallback_rounds, 0);
  // The daemon saw steps 0 to 3: step * microbatches + microbatch.
  int64_t last_step = -1;
  for (const auto& round : daemon->job().Status().recent) last_step = std::max(last_step, round->key.step);
  EXPECT_EQ(last_step, 3);
}

TEST(SimulatedRanksTest, ADaemonThatRefusesTheRanksFailsTheRun) {
  const auto daemon = StartDaemon(/*slots_per_rank=*/4);  // the ranks say 2
  const auto workload = Workload();
  SimulatedRanks ranks(Options(daemon->address()), *workload);
  const absl::Status run = ranks.Run(nullptr);
  EXPECT_FALSE(run.ok());
  EXPECT_NE(run.message().find("slots_per_rank"), std::string::npos) << run;
}

TEST(SimulatedRanksTest, WithoutADaemonEveryLayerIsPlannedLocallyAndCounted) {
  const auto workload = Workload();
  SimRanksOptions o = Options("127.0.0.1:1");  // nothing listens there
  o.call_timeout = absl::Milliseconds(300);
  SimulatedRanks ranks(o, *workload);
  std::mutex mu;
  std::vector<std::string> sources;
  ASSERT_TRUE(ranks
                  .Run([&](int64_t, int, const client::LayerPlan& plan) {
                    std::lock_guard<std::mutex> lock(mu);
                    sources.push_back(ProvenanceName(plan.identity.provenance));
                  })
                  .ok());
  EXPECT_EQ(sources, std::vector<std::string>(4, "local"));
  EXPECT_EQ(ranks.local_layers(), 4);
  EXPECT_EQ(ranks.Summarize().fallback_rounds, 4);
  EXPECT_EQ(ranks.Summarize().mismatched, 0);
}

}  // namespace
}  // namespace taot::simranks

#include "taot/planner/layer_time.h"

#include <gtest/gtest.h>

#include "taot/planner/registry.h"
#include "taot/planner/run_planner.h"
#include "taot/sim/case_generator.h"
#include "test_requests.h"

namespace taot {
namespace {

using testing::MakeRequest;

// Round figures so every expected time is worked out by hand: one token through one expert
// takes 1 us, reading an expert's weights 1 us, a token over NVLink 1 us, over IB 2 us, and an
// expert's weights 3000 us over NVLink.
ClusterSpec RoundCluster() {
  ClusterSpec c;
  c.gemm_tflops = 6;  // 6e6 FLOP/us; a token is 6e6 FLOP
  c.hbm_gbps = 6000;  // 6e6 B/us; an expert is 6e6 B
  c.nvlink_gbps = 2;  // 2000 B/us; a token is 2000 B
  c.ib_gbps = 1;      // 1000 B/us
  c.nvlink_latency_us = 0;
  c.ib_latency_us = 0;
  c.gemm_launch_us = 0;
  return c;
}

ModelSpec RoundModel(int top_k) {
  ModelSpec m;
  m.name = "round";
  m.hidden = 1000;
  m.expert_ffn = 1000;
  m.experts = 2;
  m.top_k = top_k;
  m.moe_layers = 1;
  m.tokens_per_rank = 10;
  return m;
}

TEST(LayerTimeTest, NoReplicationOnOneNode) {
  // Rank 1 sends 4 tokens to expert 0 on rank 0: 4 us of NVLink each way.
  const PlanRequest request = MakeRequest(2, 2, 1, {{10, 0}, {4, 6}}, 2);
  const LayerTime t = ModelLayerTime(RoundCluster(), RoundModel(1), request, Plan{}, true);
  EXPECT_DOUBLE_EQ(t.dispatch_us, 4);
  EXPECT_DOUBLE_EQ(t.compute_us, 14);  // rank 0: 14 tokens of expert 0
  EXPECT_DOUBLE_EQ(t.combine_us, 4);
  EXPECT_DOUBLE_EQ(t.stall_us, 0);
  EXPECT_DOUBLE_EQ(t.backward_us, 4 + 2 * 14 + 4);
  EXPECT_DOUBLE_EQ(t.gradient_return_us, 0);
}

TEST(LayerTimeTest, NewReplicaStallsUntilItsWeightsArriveAndResidentOneDoesNot) {
  PlanRequest request = MakeRequest(2, 2, 1, {{10, 0}, {4, 6}}, 2);
  Plan plan;
  plan.replicas = {{0, 1}};
  plan.assignments = {{1, 0, 1, 4}};  // rank 1 keeps its 4 tokens of expert 0
  const LayerTime moved = ModelLayerTime(RoundCluster(), RoundModel(1), request, plan, false);
  EXPECT_DOUBLE_EQ(moved.dispatch_us, 0);
  EXPECT_DOUBLE_EQ(moved.stall_us, 3000 - 6);    // weights at 3000 us, home GEMM done at 6 us
  EXPECT_DOUBLE_EQ(moved.compute_us, 3000 + 4);  // then its 4 guest tokens
  request.resident = {{0, 1}};
  const LayerTime resident = ModelLayerTime(RoundCluster(), RoundModel(1), request, plan, true);
  EXPECT_DOUBLE_EQ(resident.stall_us, 0);
  EXPECT_DOUBLE_EQ(resident.compute_us, 10);
  // The guest gradient (3000 us home over NVLink) outlasts the 20 us backward by 2980 us.
  EXPECT_DOUBLE_EQ(resident.backward_us, 2 * 10);
  EXPECT_DOUBLE_EQ(resident.gradient_return_us, 3000 - 20);
}

TEST(LayerTimeTest, ATokenCrossesInfinibandOncePerNode) {
  // Two nodes of one rank. Source 0's 10 tokens pick 2 experts each: expert 0 at home and
  // expert 1 across nodes, half the picks; 10 x (1 - 0.5^2) = 7.5 tokens cross, 15000 B at
  // 1000 B/us.
  const PlanRequest request = MakeRequest(2, 2, 1, {{10, 10}, {0, 0}}, 1);
  const LayerTime t = ModelLayerTime(RoundCluster(), RoundModel(2), request, Plan{}, false);
  EXPECT_DOUBLE_EQ(t.dispatch_us, 15);
  EXPECT_DOUBLE_EQ(t.compute_us, 10);
}

TEST(LayerTimeTest, SmallGemmsAreBoundByReadingTheWeights) {
  ClusterSpec c = RoundCluster();
  c.hbm_gbps = 6;  // reading an expert now takes 1000 us
  const PlanRequest request = MakeRequest(2, 2, 1, {{10, 0}, {0, 6}}, 2);
  EXPECT_DOUBLE_EQ(ModelLayerTime(c, RoundModel(1), request, Plan{}, false).compute_us, 1000);
}

// A Qwen3-sized EP16 layer at 70% initial imbalance.
PlanRequest QwenCase() {
  sim::CaseOptions options;
  options.imbalance = 0.7;
  options.seed = 5;
  return sim::GenerateCase(options)->request;
}

// Plans a skewed EP16 case with taot in auto mode on the given links.
absl::StatusOr<ScoredPlan> PlanAuto(const PlanRequest& request, const std::string& gbps) {
  absl::StatusOr<std::unique_ptr<Planner>> planner = PlannerRegistry::BuiltIn().Create(
      "taot", {{"target_imbalance_pct", "auto"}, {"nvlink_gbps", gbps}, {"ib_gbps", gbps}});
  if (!planner.ok()) return planner.status();
  return RunPlanner(**planner, request);
}

TEST(LayerTimeTest, AutoTargetBalancesMoreWhenTransfersAreCheap) {
  const PlanRequest request = QwenCase();
  absl::StatusOr<ScoredPlan> cheap = PlanAuto(request, "100000");
  absl::StatusOr<ScoredPlan> dear = PlanAuto(request, "0.05");
  ASSERT_TRUE(cheap.ok() && dear.ok());
  ASSERT_TRUE(cheap->plan.chosen_target_pct && dear->plan.chosen_target_pct);
  EXPECT_LT(*cheap->plan.chosen_target_pct, *dear->plan.chosen_target_pct);
  EXPECT_EQ(cheap->score.target_imbalance_pct, *cheap->plan.chosen_target_pct);
  // Slow links make every transfer dear: fewer of them.
  EXPECT_LT(dear->score.intra_node_transfers + dear->score.inter_node_transfers,
            cheap->score.intra_node_transfers + cheap->score.inter_node_transfers);
}

TEST(LayerTimeTest, AutoPlanIsNoSlowerThanAnyFixedCandidate) {
  const PlanRequest request = QwenCase();
  ClusterSpec cluster;
  ModelSpec model = *ModelPreset("qwen3-30b-a3b");
  absl::StatusOr<ScoredPlan> chosen = PlanAuto(request, "160");
  ASSERT_TRUE(chosen.ok());
  cluster.nvlink_gbps = cluster.ib_gbps = 160;
  const double auto_us = ModelLayerTime(cluster, model, request, chosen->plan, false).total_us();
  for (const char* target : {"0", "2", "5", "10", "20"}) {
    auto fixed = PlannerRegistry::BuiltIn().Create("taot", {{"target_imbalance_pct", target}});
    ASSERT_TRUE(fixed.ok());
    absl::StatusOr<ScoredPlan> plan = RunPlanner(**fixed, request);
    ASSERT_TRUE(plan.ok());
    EXPECT_LE(auto_us, ModelLayerTime(cluster, model, request, plan->plan, false).total_us() + 1e-9)
        << "target " << target;
  }
}

TEST(LayerTimeTest, ARequestTargetOverridesAuto) {
  PlanRequest request = testing::RandomRequest(16, 64, 2, 7);
  request.target_imbalance_pct = 5;
  absl::StatusOr<ScoredPlan> plan = PlanAuto(request, "160");
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->plan.chosen_target_pct);
}

TEST(LayerTimeTest, AutoRejectsUnknownPresetsAndBadOverrides) {
  for (auto [key, value] : {std::pair{"cluster", "tpu"}, {"nvlink_gbps", "-1"}, {"hidden", "x"}}) {
    auto planner = PlannerRegistry::BuiltIn().Create("taot", {{"target_imbalance_pct", "auto"}, {key, value}});
    ASSERT_FALSE(planner.ok());
    EXPECT_NE(planner.status().message().find(key), std::string::npos) << planner.status();
  }
  // Without auto the hardware keys mean nothing and are refused.
  EXPECT_FALSE(PlannerRegistry::BuiltIn().Create("taot", {{"cluster", "h800"}}).ok());
}

}  // namespace
}  // namespace taot

// taot-block on a device as a registry planner (the daemon's --device cuda:N): a batch of
// layers planned in one launch gives the CPU build's plans bit for bit, and a daemon's rounds
// planned on the device are the CPU daemon's (label `gpu`: skips without a device).
#include "taot/kernels/device_block_planner.h"

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "taot/planner/run_planner.h"
#include "taot/server/plan_rounds.h"
#include "taot/sim/case_generator.h"
#include "taot/sim/workload_families.h"

namespace taot::kernels {
namespace {

bool HaveDevice() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// Every workload family at `ranks` ranks (E = 4R, K = 2, 8 ranks per node), one layer each.
std::vector<PlanRequest> Families(int ranks) {
  std::vector<PlanRequest> requests;
  for (const sim::WorkloadFamily& family : sim::WorkloadFamilies(ranks)) {
    sim::CaseOptions o;
    o.ranks = ranks;
    o.experts = 4 * ranks;
    family.apply(o);
    requests.push_back(sim::GenerateCase(o).value().request);
  }
  return requests;
}

TEST(DeviceBlockPlannerTest, ABatchOnTheDeviceIsTheCpusPlansBitForBit) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  // Two problems (EP16 and EP64) in one batch: a launch for each run of one problem. Some layers
  // carry resident replicas, some their own target.
  std::vector<PlanRequest> requests = Families(64);
  for (PlanRequest& r : Families(16)) requests.push_back(std::move(r));
  requests[3].resident = {{0, 9}, {100, 2}, {7, 40}};
  requests[5].target_imbalance_pct = 10;
  requests[14].resident = {{3, 15}};
  std::vector<const PlanRequest*> batch;
  for (const PlanRequest& r : requests) batch.push_back(&r);
  absl::StatusOr<std::unique_ptr<Planner>> device = MakeDeviceBlockPlanner(0, {{"target_imbalance_pct", "5"}});
  ASSERT_TRUE(device.ok()) << device.status();
  auto cpu = PlannerRegistry::BuiltIn().Create("taot-block", {{"target_imbalance_pct", "5"}}).value();
  for (int round = 0; round < 2; ++round) {  // the second reuses the device buffers
    const std::vector<absl::StatusOr<ScoredPlan>> plans = RunPlannerBatch(**device, batch);
    ASSERT_EQ(plans.size(), requests.size());
    for (size_t i = 0; i < requests.size(); ++i) {
      ASSERT_TRUE(plans[i].ok()) << i << ": " << plans[i].status();
      EXPECT_EQ(plans[i]->plan, RunPlanner(*cpu, requests[i])->plan) << "layer " << i;
    }
  }
}

TEST(DeviceBlockPlannerTest, TheDaemonsRoundsOnTheDeviceAreTheCpuDaemons) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  const std::vector<PlanRequest> layers = Families(64);
  PlannerRegistry on_device = PlannerRegistry::BuiltIn();
  ASSERT_TRUE(PlanBlocksOnDevice(on_device, 0).ok());
  std::vector<std::vector<std::shared_ptr<const server::RoundPlan>>> plans;
  for (const PlannerRegistry* registry :
       {&PlannerRegistry::BuiltIn(), static_cast<const PlannerRegistry*>(&on_device)}) {
    server::RoundsConfig config;
    config.problem = layers[0].problem;
    config.round_timeout = absl::Seconds(30);
    config.registry = registry;
    std::unique_ptr<server::PlanRounds> rounds = server::PlanRounds::Create(config, "taot-block").value();
    std::vector<server::PlanRounds::Ticket> tickets;
    for (int rank = 0; rank < 64; ++rank) {
      std::vector<server::PlanRounds::LayerRow> rows;
      for (size_t i = 0; i < layers.size(); ++i) rows.push_back({static_cast<int32_t>(i), layers[i].load.row(rank)});
      absl::StatusOr<std::vector<server::PlanRounds::Ticket>> submitted = rounds->SubmitRows(1, rank, rows);
      ASSERT_TRUE(submitted.ok()) << submitted.status();
      if (rank == 0) tickets = *std::move(submitted);
    }
    auto& got = plans.emplace_back();
    for (const auto& ticket : tickets) {
      absl::StatusOr<std::shared_ptr<const server::RoundPlan>> plan = rounds->Await(ticket, absl::Now());
      ASSERT_TRUE(plan.ok()) << plan.status();
      EXPECT_FALSE((*plan)->identity.fallback()) << (*plan)->identity.reason;
      got.push_back(*plan);
    }
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    EXPECT_EQ(plans[1][i]->plan, plans[0][i]->plan) << "layer " << i;
    EXPECT_EQ(plans[1][i]->identity.hash, plans[0][i]->identity.hash) << "layer " << i;
  }
}

}  // namespace
}  // namespace taot::kernels

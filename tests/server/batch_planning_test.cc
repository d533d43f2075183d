// A batch spread over threads (--planning-threads): every part on a thread of its own, each
// with its own planner instance, the plans those of one instance planning alone; and the
// planners that must see a batch whole (a device's launch) or on one instance (plugins) do.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "taot/server/batch_workers.h"
#include "taot/server/planner_slots.h"
#include "taot/sim/case_generator.h"

namespace taot::server {
namespace {

TEST(BatchWorkersTest, EveryPartRunsOnceOnAThreadOfItsOwn) {
  BatchWorkers workers(4);
  EXPECT_EQ(workers.threads(), 4);
  for (int round = 0; round < 200; ++round) {
    const int parts = 1 + round % 4;
    absl::Mutex mu;
    std::vector<int> runs(static_cast<size_t>(parts), 0);
    std::set<std::thread::id> threads;
    workers.Run(parts, [&](int i) {
      absl::MutexLock lock(&mu);
      ++runs[static_cast<size_t>(i)];
      threads.insert(std::this_thread::get_id());
    });
    EXPECT_EQ(runs, std::vector<int>(static_cast<size_t>(parts), 1)) << "round " << round;
    EXPECT_EQ(threads.size(), static_cast<size_t>(parts)) << "round " << round;
  }
}

// taot, as instance `id` of its kind, recording the batches each instance got.
struct Calls {
  absl::Mutex mu;
  std::vector<std::pair<int, size_t>> batches;  // (instance, size)
  int instances = 0;
};

class Recorder final : public Planner {
 public:
  Recorder(Calls& calls, Batching batching) : calls_(calls), batching_(batching) {
    absl::MutexLock lock(&calls_.mu);
    id_ = calls_.instances++;
  }
  std::string_view name() const override { return "recorder"; }
  Batching batching() const override { return batching_; }
  absl::StatusOr<Plan> MakePlan(const PlanRequest& request) override { return taot_->MakePlan(request); }
  std::vector<absl::StatusOr<Plan>> MakePlans(std::span<const PlanRequest* const> requests) override {
    {
      absl::MutexLock lock(&calls_.mu);
      calls_.batches.emplace_back(id_, requests.size());
    }
    return Planner::MakePlans(requests);
  }

 private:
  Calls& calls_;
  const Batching batching_;
  int id_ = 0;
  std::unique_ptr<Planner> taot_ = PlannerRegistry::BuiltIn().Create("taot").value();
};

std::vector<PlanRequest> Layers(int n) {
  std::vector<PlanRequest> layers;
  for (int i = 0; i < n; ++i) {
    sim::CaseOptions o;
    o.imbalance = 0.1 * (i + 1);
    o.seed = static_cast<uint64_t>(i + 1);
    layers.push_back(sim::GenerateCase(o)->request);
  }
  return layers;
}

// The batches a slot of `threads` threads gives a Recorder of `batching`, planning `layers`;
// the plans are checked against taot's one by one.
std::vector<std::pair<int, size_t>> Plan(int threads, Planner::Batching batching,
                                         const std::vector<PlanRequest>& layers) {
  Calls calls;
  PlannerRegistry registry;
  EXPECT_TRUE(registry
                  .Register({"recorder", "taot, recording", {}},
                            [&](const PlannerParams&) -> absl::StatusOr<std::unique_ptr<Planner>> {
                              return std::make_unique<Recorder>(calls, batching);
                            })
                  .ok());
  PlannerSlots slots(registry, nullptr, threads);
  EXPECT_TRUE(slots.Set("recorder", {}).ok());
  std::vector<const PlanRequest*> batch;
  for (const PlanRequest& r : layers) batch.push_back(&r);
  for (int round = 0; round < 2; ++round) {  // the second reuses the instances
    const std::vector<absl::StatusOr<ScoredPlan>> plans = slots.current()->PlanBatch(batch, absl::InfiniteFuture());
    EXPECT_EQ(plans.size(), layers.size());
    for (size_t i = 0; i < layers.size() && i < plans.size(); ++i) {
      EXPECT_TRUE(plans[i].ok()) << plans[i].status();
      if (plans[i].ok()) {
        EXPECT_EQ(plans[i]->plan, RunPlanner(*PlannerRegistry::BuiltIn().Create("taot").value(), layers[i])->plan);
      }
    }
  }
  EXPECT_LE(calls.instances, threads);
  return calls.batches;
}

TEST(BatchPlanningTest, ABatchIsSpreadOverTheThreadsEveryPartTakingEveryNthLayer) {
  const std::vector<PlanRequest> layers = Layers(7);
  using Batches = std::vector<std::pair<int, size_t>>;
  Batches got = Plan(3, Planner::Batching::kSpread, layers);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (Batches{{0, 3}, {0, 3}, {1, 2}, {1, 2}, {2, 2}, {2, 2}}));
  // Fewer layers than threads: one each.
  got = Plan(4, Planner::Batching::kSpread, Layers(2));
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (Batches{{0, 1}, {0, 1}, {1, 1}, {1, 1}}));
}

TEST(BatchPlanningTest, ADevicesBatchStaysWholeAndAPluginsOnOneInstance) {
  const std::vector<PlanRequest> layers = Layers(5);
  using Batches = std::vector<std::pair<int, size_t>>;
  EXPECT_EQ(Plan(3, Planner::Batching::kWhole, layers), (Batches{{0, 5}, {0, 5}}));
  EXPECT_EQ(Plan(3, Planner::Batching::kOneThread, layers), (Batches{{0, 5}, {0, 5}}));
  EXPECT_EQ(Plan(1, Planner::Batching::kSpread, layers), (Batches{{0, 5}, {0, 5}}));
}

}  // namespace
}  // namespace taot::server

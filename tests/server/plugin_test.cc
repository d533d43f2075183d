#include "taot/server/plugin_planner.h"

#include <gtest/gtest.h>

#include "taot/planner/plan_validator.h"
#include "taot/planner/run_planner.h"
#include "taot/server/job.h"
#include "taot/sim/case_generator.h"

namespace taot::server {
namespace {

PlanRequest Skewed() {
  sim::CaseOptions o;
  o.ranks = 16;
  o.experts = 64;
  o.imbalance = 0.6;
  return sim::GenerateCase(o).value().request;
}

// Remembers the last planner the job announced.
class LastPlanner final : public JobObserver {
 public:
  void OnPlan(const RoundPlan&) override {}
  void OnRegistered(int) override {}
  void OnPlanner(const std::string& name, uint64_t) override { name_ = name; }
  void OnRequest(std::string_view, const absl::Status&) override {}
  const std::string& name() const { return name_; }

 private:
  std::string name_;
};

// A 16-rank job planning with `registry`'s planners.
std::unique_ptr<Job> JobOn(const PlannerRegistry& registry, JobObserver* observer = nullptr) {
  JobConfig config;
  config.observer = observer;
  config.job_id = "p";
  config.world_size = 16;
  config.experts = 64;
  config.node_of_rank = Skewed().topology.node_of_rank();
  config.registry = &registry;
  return *Job::Create(config);
}

TEST(PluginTest, TheExamplePluginLoadsPlansValidlyAndTakesParameters) {
  PlannerRegistry registry = PlannerRegistry::BuiltIn();
  absl::StatusOr<std::string> name = RegisterPlugin(TAOT_GREEDY_PLUGIN, registry);
  ASSERT_TRUE(name.ok()) << name.status();
  EXPECT_EQ(*name, "greedy");
  auto planner = registry.Create("greedy");
  ASSERT_TRUE(planner.ok()) << planner.status();
  const PlanRequest request = Skewed();
  absl::StatusOr<ScoredPlan> plan = RunPlanner(**planner, request);  // validates the plan
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->plan.replicas.empty());
  EXPECT_LT(plan->score.imbalance_after_pct, plan->score.imbalance_before_pct);
  // Its own parameters, checked by the plugin.
  auto limited = registry.Create("greedy", {{"max_moves", "1"}});
  ASSERT_TRUE(limited.ok());
  EXPECT_EQ(RunPlanner(**limited, request)->plan.replicas.size(), 1u);
  auto bad = registry.Create("greedy", {{"colour", "blue"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown parameter"), std::string::npos) << bad.status();
  // The same name twice is refused.
  EXPECT_FALSE(RegisterPlugin(TAOT_GREEDY_PLUGIN, registry).ok());
}

TEST(PluginTest, BrokenOrForeignLibrariesAreRefusedWithTheirPathAndCause) {
  PlannerRegistry registry = PlannerRegistry::BuiltIn();
  const size_t before = registry.names().size();
  auto broken = RegisterPlugin(TAOT_BROKEN_PLUGIN, registry);
  ASSERT_FALSE(broken.ok());
  EXPECT_NE(broken.status().message().find("probe request is refused"), std::string::npos) << broken.status();
  auto missing = RegisterPlugin("/nonexistent/libplugin.so", registry);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot load"), std::string::npos) << missing.status();
  auto foreign = RegisterPlugin("libm.so.6", registry);
  ASSERT_FALSE(foreign.ok());
  EXPECT_NE(foreign.status().message().find("no symbol taotPlannerPlugin_v1"), std::string::npos) << foreign.status();
  EXPECT_EQ(registry.names().size(), before);
}

TEST(PluginTest, AJobSwapsToAPluginByNameAndKeepsItsPlannerOnAnUnknownOne) {
  PlannerRegistry registry = PlannerRegistry::BuiltIn();
  ASSERT_TRUE(RegisterPlugin(TAOT_GREEDY_PLUGIN, registry).ok());
  std::unique_ptr<Job> job = JobOn(registry);
  ASSERT_TRUE(job->SetPlanner("greedy", {}).ok());
  EXPECT_FALSE(job->SetPlanner("broken", {}).ok());
  auto plan = (*job->Rounds())->ReportMatrix({0, 0}, Skewed().load);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ((*plan)->planner, "greedy");
  EXPECT_FALSE((*plan)->fallback);
}

TEST(PluginTest, APluginThatPlansWronglyLaterIsDroppedForThePreviousPlanner) {
  PlannerRegistry registry = PlannerRegistry::BuiltIn();
  ASSERT_TRUE(RegisterPlugin(TAOT_SLY_PLUGIN, registry).ok());  // passes the probe
  LastPlanner observer;
  std::unique_ptr<Job> job = JobOn(registry, &observer);
  PlanRounds& rounds = **job->Rounds();
  ASSERT_TRUE(job->SetPlanner("sly", {}).ok());
  EXPECT_EQ(observer.name(), "sly");
  auto first = rounds.ReportMatrix({0, 0}, Skewed().load);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE((*first)->fallback);
  EXPECT_NE((*first)->reason.find("back to planner taot"), std::string::npos) << (*first)->reason;
  auto second = rounds.ReportMatrix({0, 1}, Skewed().load);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ((*second)->planner, "taot");
  EXPECT_FALSE((*second)->fallback);
  EXPECT_EQ(job->Status().planner, "taot");
  EXPECT_EQ(observer.name(), "taot");  // the metrics' active planner follows
}

}  // namespace
}  // namespace taot::server

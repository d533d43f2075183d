#include "taot/server/plugin_planner.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "taot/planner/plan_validator.h"
#include "taot/planner/run_planner.h"
#include "taot/server/job.h"
#include "taot/sim/case_generator.h"
#include "taot/v1/planner.pb.h"

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
  config.node_of_rank = Skewed().topology().node_of_rank();
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
  auto bare = RegisterPlugin("libm.so.6", registry);
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.status().message().find("give the library's path"), std::string::npos) << bare.status();
  // A text file by a path (not __FILE__: a compiler cache may make it relative to another folder).
  const std::string text_path =
      (std::filesystem::temp_directory_path() / ("taot_plugin_test_" + std::to_string(getpid()) + ".so")).string();
  std::ofstream(text_path) << "not a library\n";
  auto text = RegisterPlugin(text_path, registry);
  std::filesystem::remove(text_path);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("not an ELF shared library"), std::string::npos) << text.status();
  EXPECT_EQ(registry.names().size(), before);
}

// The client library links the same generated protobuf descriptors as the daemon; loading it
// aborted the process (protobuf's FATAL on registering them twice).
TEST(PluginTest, ALibraryThatIsNoPluginIsRefusedBeforeAnyOfItsCodeRuns) {
  const taot::v1::Plan daemon_side;  // this process holds the descriptors, as the daemon does
  EXPECT_EQ(daemon_side.GetTypeName(), "taot.v1.Plan");
  PlannerRegistry registry = PlannerRegistry::BuiltIn();
  auto client = RegisterPlugin(TAOT_CLIENT_LIBRARY, registry);
  ASSERT_FALSE(client.ok());
  EXPECT_NE(client.status().message().find(TAOT_CLIENT_LIBRARY), std::string::npos) << client.status();
  EXPECT_NE(client.status().message().find("does not export taotPlannerPlugin_v1"), std::string::npos)
      << client.status();
}

// The ELF reader sees only the file: a plugin cut short anywhere is refused, never read past.
TEST(PluginTest, ATruncatedLibraryIsRefused) {
  std::ifstream in(TAOT_GREEDY_PLUGIN, std::ios::binary);
  const std::string whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(whole.size(), 4096u);
  const std::string path = ::testing::TempDir() + "/taot_truncated_plugin.so";
  PlannerRegistry registry = PlannerRegistry::BuiltIn();
  for (size_t size : {size_t{10}, size_t{100}, whole.size() / 2, whole.size() - 1}) {
    std::ofstream(path, std::ios::binary | std::ios::trunc).write(whole.data(), static_cast<std::streamsize>(size));
    auto cut = RegisterPlugin(path, registry);
    EXPECT_FALSE(cut.ok()) << size;
    EXPECT_NE(cut.status().message().find(path), std::string::npos) << cut.status();
  }
  std::remove(path.c_str());
}

TEST(PluginTest, APluginWhoseLoadingCrashesOrHangsIsRefusedAndThisProcessLives) {
  PlannerRegistry registry = PlannerRegistry::BuiltIn();
  auto crashing = RegisterPlugin(TAOT_CRASHING_PLUGIN, registry);
  ASSERT_FALSE(crashing.ok());
  EXPECT_NE(crashing.status().message().find("signal 6 (SIGABRT): its initialisers crash"), std::string::npos)
      << crashing.status();
  auto hanging = RegisterPlugin(TAOT_HANGING_PLUGIN, registry, absl::Milliseconds(300));
  ASSERT_FALSE(hanging.ok());
  EXPECT_NE(hanging.status().message().find("did not finish within 300ms"), std::string::npos) << hanging.status();
  EXPECT_FALSE(registry.Create("crashing").ok());
  EXPECT_FALSE(registry.Create("hanging").ok());
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
  EXPECT_FALSE((*plan)->identity.fallback());
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
  EXPECT_TRUE((*first)->identity.fallback());
  EXPECT_NE((*first)->identity.reason.find("back to planner taot"), std::string::npos) << (*first)->identity.reason;
  auto second = rounds.ReportMatrix({0, 1}, Skewed().load);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ((*second)->planner, "taot");
  EXPECT_FALSE((*second)->identity.fallback());
  EXPECT_EQ(job->Status().planner, "taot");
  EXPECT_EQ(observer.name(), "taot");  // the metrics' active planner follows
}

}  // namespace
}  // namespace taot::server

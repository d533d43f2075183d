#include "taot/server/job.h"

#include <gtest/gtest.h>

#include <functional>

namespace taot::server {
namespace {

JobConfig Config() {
  JobConfig c;
  c.job_id = "job-1";
  c.world_size = 4;
  c.experts = 16;
  return c;
}

RankInfo Info(int rank, const std::string& node, const std::string& run_id = "") {
  RankInfo info;
  info.job_id = "job-1";
  info.rank = rank;
  info.world_size = 4;
  info.node = node;
  info.local_rank = rank % 2;
  info.device = "cuda:" + std::to_string(rank % 2);
  info.run_id = run_id;
  return info;
}

TEST(JobTest, PlanningWaitsForEveryRankThenGroupsRanksByNode) {
  std::unique_ptr<Job> job = *Job::Create(Config());
  EXPECT_EQ(job->Rounds().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(job->Rounds().status().message().find("0 of 4 registered"), std::string::npos);
  ASSERT_TRUE(job->Register(Info(0, "host-b")).ok());
  ASSERT_TRUE(job->Register(Info(1, "host-b")).ok());
  ASSERT_TRUE(job->Register(Info(2, "host-a")).ok());
  EXPECT_FALSE(job->Rounds().ok());
  ASSERT_TRUE(job->Register(Info(3, "host-a")).ok());
  absl::StatusOr<std::shared_ptr<PlanRounds>> rounds = job->Rounds();
  ASSERT_TRUE(rounds.ok()) << rounds.status();
  const JobStatus status = job->Status();
  EXPECT_EQ(status.registered, 4);
  EXPECT_EQ(status.nodes, 2);
  // Ranks 0, 1 share a node and 2, 3 another: a plan's transfers say so.
  LoadMatrix load(4, 16);
  for (int s = 0; s < 4; ++s) load.at(s, 0) = 400;  // expert 0 (rank 0) is hot
  auto plan = (*rounds)->ReportMatrix({0, 0}, load);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_GT((*plan)->score.intra_node_transfers, 0);
}

TEST(JobTest, ConflictsAreRefusedAndChangeNothing) {
  std::unique_ptr<Job> job = *Job::Create(Config());
  ASSERT_TRUE(job->Register(Info(0, "host-a")).ok());
  EXPECT_TRUE(job->Register(Info(0, "host-a")).ok());  // a restarted rank says the same
  absl::Status twice = job->Register(Info(0, "host-z"));
  EXPECT_EQ(twice.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(twice.message().find("rank 0 is already registered from node 'host-a'"), std::string::npos) << twice;
  RankInfo wrong_world = Info(1, "host-a");
  wrong_world.world_size = 8;
  EXPECT_EQ(job->Register(wrong_world).code(), absl::StatusCode::kFailedPrecondition);
  RankInfo other_job = Info(1, "host-a");
  other_job.job_id = "job-2";
  EXPECT_EQ(job->Register(other_job).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(job->Register(Info(7, "host-a")).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(job->Status().registered, 1);
}

TEST(JobTest, AShapeThatDisagreesWithTheJobsIsRefusedNamingBothValues) {
  std::unique_ptr<Job> job = *Job::Create(Config());
  for (auto [mutate, text] : std::vector<std::pair<std::function<void(RankInfo&)>, std::string>>{
           {[](RankInfo& i) { i.experts = 32; }, "experts: rank 1 has 32, the daemon's job 'job-1' has 16"},
           {[](RankInfo& i) { i.slots_per_rank = 1; }, "slots_per_rank: rank 1 has 1, the daemon's job 'job-1' has 2"},
           {[](RankInfo& i) { i.world_size = 8; }, "world_size: rank 1 has 8, the daemon's job 'job-1' has 4"}}) {
    RankInfo info = Info(1, "host-a");
    mutate(info);
    const absl::Status s = job->Register(info);
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(s.message().find(text), std::string::npos) << s;
  }
  RankInfo agrees = Info(1, "host-a");
  agrees.experts = 16;
  agrees.slots_per_rank = 2;
  EXPECT_TRUE(job->Register(agrees).ok());
  EXPECT_EQ(job->Status().registered, 1);
}

TEST(JobTest, ANewRunStartsItsRoundsOverAndRefusesTheOldRunsReports) {
  std::unique_ptr<Job> job = *Job::Create(Config());
  for (int r = 0; r < 4; ++r) ASSERT_TRUE(job->Register(Info(r, "host-a", "run-1")).ok());
  std::shared_ptr<PlanRounds> first = *job->Rounds("run-1");
  LoadMatrix load(4, 16);
  load.at(0, 0) = 100;
  ASSERT_TRUE(first->ReportMatrix({47, 0}, load).ok());
  // The trainer restarts (or resumes from a checkpoint): a new run, from step 0.
  ASSERT_TRUE(job->Register(Info(2, "host-a", "run-2")).ok());
  EXPECT_EQ(job->Status().run_id, "run-2");
  EXPECT_EQ(job->Status().registered, 1);
  const absl::Status old = job->Rounds("run-1").status();
  EXPECT_EQ(old.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(old.message().find("run 'run-1' of job job-1 was replaced by run 'run-2'"), std::string::npos) << old;
  EXPECT_FALSE(job->Rounds("run-2").ok());  // waiting for its ranks
  for (int r : {0, 1, 3}) ASSERT_TRUE(job->Register(Info(r, "host-b", "run-2")).ok());
  std::shared_ptr<PlanRounds> second = *job->Rounds("run-2");
  EXPECT_NE(second, first);
  // Step 0 of the new run is not stale, though the old run had reached step 47.
  absl::StatusOr<std::shared_ptr<const RoundPlan>> plan = second->ReportMatrix({0, 0}, load);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE((*plan)->identity.fallback());
  EXPECT_EQ(job->Status().runs, 3);  // the unnamed first run, then run-1 and run-2
  // A report that names no run goes to the current one.
  EXPECT_EQ(*job->Rounds(), second);
}

TEST(JobTest, AConfiguredTopologyPlansAtOnce) {
  JobConfig c = Config();
  c.node_of_rank = std::vector<int>{0, 0, 1, 1};
  std::unique_ptr<Job> job = *Job::Create(c);
  EXPECT_TRUE(job->Rounds().ok());
  c.node_of_rank = std::vector<int>{0, 0};
  EXPECT_NE(Job::Create(c).status().message().find("node_of_rank"), std::string::npos);
}

TEST(JobTest, BadConfigurationsNameTheField) {
  for (auto [mutate, field] : std::vector<std::pair<std::function<void(JobConfig&)>, std::string>>{
           {[](JobConfig& c) { c.job_id = ""; }, "job_id"},
           {[](JobConfig& c) { c.world_size = 0; }, "world_size"},
           {[](JobConfig& c) { c.experts = 6; }, "experts"},
           {[](JobConfig& c) { c.planner = "magic"; }, "magic"},
           {[](JobConfig& c) { c.planner = "eplb"; }, "'eplb' is comparison only"},
           {[](JobConfig& c) {
              c.params = {{"colour", "blue"}};
            },
            "colour"}}) {
    JobConfig c = Config();
    mutate(c);
    absl::StatusOr<std::unique_ptr<Job>> job = Job::Create(c);
    ASSERT_FALSE(job.ok()) << field;
    EXPECT_NE(job.status().message().find(field), std::string::npos) << job.status();
  }
}

TEST(JobTest, PlannerSwapsBeforeAndAfterTheRoundsStartCountOneVersionEach) {
  std::unique_ptr<Job> job = *Job::Create(Config());
  ASSERT_TRUE(job->SetPlanner("echo", {}).ok());
  EXPECT_FALSE(job->SetPlanner("magic", {}).ok());
  EXPECT_EQ(job->SetPlanner("eplb", {}).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(job->Status().planner, "echo");
  EXPECT_EQ(job->Status().planner_version, 2u);
  for (int r = 0; r < 4; ++r) ASSERT_TRUE(job->Register(Info(r, r < 2 ? "a" : "b")).ok());
  EXPECT_EQ((*job->Rounds())->planner().name, "echo");
  EXPECT_EQ((*job->Rounds())->planner().version, 2u);
  ASSERT_TRUE(job->SetPlanner("taot", {{"target_imbalance_pct", "5"}}).ok());
  EXPECT_EQ(job->Status().planner_version, 3u);
  EXPECT_EQ(job->Status().params.at("target_imbalance_pct"), "5");
}

}  // namespace
}  // namespace taot::server

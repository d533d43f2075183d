#include "taot/server/job.h"

#include <gtest/gtest.h>

namespace taot::server {
namespace {

JobConfig Config() {
  JobConfig c;
  c.job_id = "job-1";
  c.world_size = 4;
  c.experts = 16;
  return c;
}

RankInfo Info(int rank, const std::string& node) {
  return {"job-1", rank, 4, node, rank % 2, "cuda:" + std::to_string(rank % 2)};
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
  absl::StatusOr<PlanRounds*> rounds = job->Rounds();
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
           {[](JobConfig& c) { c.params = {{"colour", "blue"}}; }, "colour"}}) {
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

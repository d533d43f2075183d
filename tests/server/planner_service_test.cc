// The taot.v1.Planner service over a real loopback gRPC server: remote planning for every rank,
// and each kind of bad input answered with a clear status that changes nothing.
#include "taot/server/planner_service.h"

#include <gtest/gtest.h>

#include <numeric>
#include <thread>

#include "loopback_daemon.h"
#include "taot/planner/case_json.h"
#include "taot/planner/plan_hash.h"
#include "taot/planner/run_planner.h"
#include "taot/sim/case_generator.h"
#include "taot/wire/load_wire.h"
#include "taot/wire/plan_wire.h"
#include "taot/wire/scorecard_wire.h"

namespace taot::server {
namespace {

class PlannerServiceTest : public ::testing::Test {
 protected:
  static constexpr int kMaxMessage = 64 << 10;

  void SetUp() override {
    testing::LoopbackDaemonOptions options;
    options.configure = [](JobConfig& config) {
      config.round_timeout = absl::Milliseconds(200);
      config.predictive = true;
    };
    options.build = [](grpc::ServerBuilder& builder) { builder.SetMaxReceiveMessageSize(kMaxMessage); };
    daemon_ = testing::LoopbackDaemon::Start(options);
    ASSERT_NE(daemon_, nullptr);
    request_ = daemon_->request();
    job_ = &daemon_->job();
    stub_ = daemon_->PlannerStub();
    admin_ = daemon_->AdminStub();
  }

  taot::v1::ReportLoadRequest Row(int rank, int64_t step, int layer) const {
    taot::v1::ReportLoadRequest r;
    r.set_job_id("job-1");
    r.set_rank(rank);
    r.set_step(step);
    r.set_layer(layer);
    wire::RowToProto(request_.load.row(rank), *r.mutable_counts());
    return r;
  }

  // The case's whole matrix for (step, layer).
  taot::v1::ReportMatrixRequest Matrix(int64_t step, int layer) const {
    taot::v1::ReportMatrixRequest m;
    m.set_job_id("job-1");
    m.set_step(step);
    m.set_layer(layer);
    wire::MatrixToProto(request_.load, m);
    return m;
  }

  grpc::Status Call(const taot::v1::ReportLoadRequest& request, taot::v1::Plan& plan,
                    std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + timeout);
    return stub_->ReportLoad(&context, request, &plan);
  }

  std::unique_ptr<testing::LoopbackDaemon> daemon_;
  PlanRequest request_;
  Job* job_ = nullptr;
  std::unique_ptr<taot::v1::Planner::Stub> stub_;
  std::unique_ptr<taot::v1::Admin::Stub> admin_;
};

TEST_F(PlannerServiceTest, EveryRankGetsTheSamePlanVersionAndHash) {
  std::vector<taot::v1::Plan> plans(8);
  std::vector<grpc::Status> statuses(8);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 8; ++r) ranks.emplace_back([&, r] { statuses[r] = Call(Row(r, 0, 3), plans[r]); });
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < 8; ++r) {
    ASSERT_TRUE(statuses[r].ok()) << statuses[r].error_message();
    EXPECT_EQ(plans[r].hash(), plans[0].hash());
    EXPECT_EQ(plans[r].version(), 1u);
    EXPECT_EQ(plans[r].layer(), 3);
    EXPECT_FALSE(plans[r].fallback());
  }
  // The hash is the plan's own: decoding recomputes it from the message.
  absl::StatusOr<Plan> plan = wire::PlanFromProto(plans[0]);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->replicas.empty());
  EXPECT_LT(plans[0].stats().imbalance_after_pct(), plans[0].stats().imbalance_before_pct());
  // The whole scorecard came along: every token is counted where it is computed.
  absl::StatusOr<Scorecard> score = wire::ScorecardFromProto(plans[0].stats());
  ASSERT_TRUE(score.ok()) << score.status();
  EXPECT_EQ(score->target_imbalance_pct, kDefaultTargetImbalancePct);
  EXPECT_EQ(score->tokens_local + score->tokens_intra_node + score->tokens_inter_node,
            std::accumulate(request_.load.data().begin(), request_.load.data().end(), int64_t{0}));
}

TEST_F(PlannerServiceTest, AMissingRankMakesAFlaggedFallbackForEveryoneElse) {
  taot::v1::Plan plan;
  ASSERT_TRUE(Call(Row(0, 1, 0), plan).ok());  // alone: waits for the 200 ms round deadline
  EXPECT_TRUE(plan.fallback());
  EXPECT_EQ(plan.replicas_size(), 0);
  EXPECT_NE(plan.fallback_reason().find("7 of 8 ranks had not reported"), std::string::npos);
}

TEST_F(PlannerServiceTest, BadInputGetsAClearStatus) {
  taot::v1::Plan plan;
  auto expect = [&](taot::v1::ReportLoadRequest request, grpc::StatusCode code, const std::string& needle) {
    const grpc::Status s = Call(request, plan);
    EXPECT_EQ(s.error_code(), code) << s.error_message();
    EXPECT_NE(s.error_message().find(needle), std::string::npos) << s.error_message();
  };
  taot::v1::ReportLoadRequest r = Row(0, 2, 0);
  r.set_job_id("job-2");
  expect(r, grpc::StatusCode::NOT_FOUND, "unknown job 'job-2'");
  r = Row(0, 2, 0);
  r.set_rank(9);
  expect(r, grpc::StatusCode::INVALID_ARGUMENT, "rank: must be in [0, 8)");
  r = Row(0, 2, 0);
  r.set_counts(5, -3);
  expect(r, grpc::StatusCode::INVALID_ARGUMENT, "load[5]");
  r = Row(0, 2, 0);
  r.add_counts(1);
  expect(r, grpc::StatusCode::INVALID_ARGUMENT, "load: must have 32 entries");
  taot::v1::ReportMatrixRequest m;
  m.set_job_id("job-1");
  m.set_ranks(8);
  m.set_experts(32);
  m.add_counts(1);
  grpc::ClientContext context;
  const grpc::Status s = stub_->ReportMatrix(&context, m, &plan);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("counts: must hold ranks x experts = 8 x 32"), std::string::npos);
  // Nothing counted: all 8 ranks of step 2 still plan normally.
  std::vector<std::thread> ranks;
  std::vector<grpc::Status> statuses(8);
  std::vector<taot::v1::Plan> plans(8);
  for (int k = 0; k < 8; ++k) ranks.emplace_back([&, k] { statuses[k] = Call(Row(k, 2, 0), plans[k]); });
  for (std::thread& t : ranks) t.join();
  for (const grpc::Status& st : statuses) EXPECT_TRUE(st.ok()) << st.error_message();
  EXPECT_FALSE(plans[0].fallback());
}

TEST_F(PlannerServiceTest, OversizedMessagesAndStaleStepsAreRefused) {
  taot::v1::ReportMatrixRequest big;
  big.set_job_id("job-1");
  big.set_ranks(8);
  big.set_experts(32);
  for (int i = 0; i < kMaxMessage; ++i) big.add_counts(1 << 20);  // 3 bytes each: 3x the limit
  taot::v1::Plan plan;
  {
    grpc::ClientContext context;
    const grpc::Status s = stub_->ReportMatrix(&context, big, &plan);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  }
  const taot::v1::ReportMatrixRequest m = Matrix(10, 0);
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->ReportMatrix(&context, m, &plan).ok());
  }
  const grpc::Status stale = Call(Row(0, 1, 0), plan);
  EXPECT_EQ(stale.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_NE(stale.error_message().find("step 1 is stale"), std::string::npos) << stale.error_message();
}

TEST_F(PlannerServiceTest, TheCallersDeadlineIsHonoured) {
  taot::v1::Plan plan;
  const grpc::Status s = Call(Row(0, 3, 0), plan, std::chrono::milliseconds(20));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
}

TEST_F(PlannerServiceTest, TheWholeMatrixPlansInOneCall) {
  const taot::v1::ReportMatrixRequest m = Matrix(4, 1);
  taot::v1::Plan plan;
  grpc::ClientContext context;
  ASSERT_TRUE(stub_->ReportMatrix(&context, m, &plan).ok());
  EXPECT_FALSE(plan.fallback());
  EXPECT_GT(plan.replicas_size(), 0);
  // A rank reporting its row afterwards gets the same plan.
  taot::v1::Plan row_plan;
  ASSERT_TRUE(Call(Row(5, 4, 1), row_plan).ok());
  EXPECT_EQ(row_plan.hash(), plan.hash());
}

TEST_F(PlannerServiceTest, StreamsCarryEveryLayerOfAMicrobatchInOneMessage) {
  constexpr int kLayers = 4;
  std::vector<std::vector<taot::v1::Plan>> plans(8);
  std::vector<grpc::Status> statuses(8);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 8; ++r) {
    ranks.emplace_back([&, r] {
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      auto stream = stub_->Stream(&context);
      for (int64_t step = 0; step < 2; ++step) {
        taot::v1::StreamRequest request;
        request.set_job_id("job-1");
        request.set_rank(r);
        request.set_step(10 + step);
        for (int layer = 0; layer < kLayers; ++layer) {
          taot::v1::LayerLoad* l = request.add_layers();
          l->set_layer(layer);
          for (int64_t n : request_.load.row(r)) l->add_counts(n);
        }
        ASSERT_TRUE(stream->Write(request));
        taot::v1::StreamResponse response;
        ASSERT_TRUE(stream->Read(&response));
        ASSERT_EQ(response.plans_size(), kLayers);
        plans[r].insert(plans[r].end(), response.plans().begin(), response.plans().end());
        // The plans went out as shared bytes behind hand-made framing: they arrive whole.
        for (const taot::v1::Plan& plan : response.plans()) {
          absl::StatusOr<Plan> parsed = wire::PlanFromProto(plan);
          ASSERT_TRUE(parsed.ok()) << parsed.status();
          EXPECT_FALSE(parsed->replicas.empty());
        }
      }
      stream->WritesDone();
      statuses[r] = stream->Finish();
    });
  }
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < 8; ++r) {
    ASSERT_TRUE(statuses[r].ok()) << statuses[r].error_message();
    ASSERT_EQ(plans[r].size(), 2u * kLayers);
    for (size_t i = 0; i < plans[r].size(); ++i) {
      EXPECT_EQ(plans[r][i].layer(), static_cast<int>(i % kLayers));
      EXPECT_EQ(plans[r][i].hash(), plans[0][i].hash());
      EXPECT_FALSE(plans[r][i].fallback());
    }
  }
}

// An EP8 job of its own, for tests that need another round timeout or a token.
std::unique_ptr<testing::LoopbackDaemon> LoneDaemon(absl::Duration round_timeout, std::string token = "") {
  testing::LoopbackDaemonOptions options;
  options.configure = [round_timeout](JobConfig& config) { config.round_timeout = round_timeout; };
  options.token = std::move(token);
  return testing::LoopbackDaemon::Start(options);
}

TEST(PlannerServiceTokenTest, EveryPlanningCallWithoutTheTokenIsRefusedAndCountsNothing) {
  const auto daemon = LoneDaemon(absl::Seconds(10), "s3cret");
  ASSERT_NE(daemon, nullptr);
  const PlanRequest& request = daemon->request();
  Job* job = &daemon->job();
  const auto stub = daemon->PlannerStub();
  auto with = [](grpc::ClientContext& context, const std::string& token) {
    if (!token.empty()) context.AddMetadata("authorization", "Bearer " + token);
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  };
  taot::v1::ReportMatrixRequest matrix;
  matrix.set_job_id("job-1");
  matrix.set_ranks(8);
  matrix.set_experts(32);
  for (int64_t n : request.load.data()) matrix.add_counts(n);
  taot::v1::ReportLoadRequest row;
  row.set_job_id("job-1");
  for (int64_t n : request.load.row(0)) row.add_counts(n);
  taot::v1::StreamRequest stream_request;
  stream_request.set_job_id("job-1");
  *stream_request.add_layers()->mutable_counts() = row.counts();
  for (const std::string token : {"", "wrong"}) {
    taot::v1::Plan plan;
    {
      grpc::ClientContext context;
      with(context, token);
      const grpc::Status s = stub->ReportMatrix(&context, matrix, &plan);
      EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
    }
    {
      grpc::ClientContext context;
      with(context, token);
      const grpc::Status s = stub->ReportLoad(&context, row, &plan);
      EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
    }
    {
      grpc::ClientContext context;
      with(context, token);
      auto stream = stub->Stream(&context);
      stream->Write(stream_request);
      stream->WritesDone();
      taot::v1::StreamResponse response;
      EXPECT_FALSE(stream->Read(&response));
      const grpc::Status s = stream->Finish();
      EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
    }
  }
  // Nothing was planned or counted: no recent plans, and rank 0's row is still open, so a
  // different row for it is accepted.
  EXPECT_TRUE(job->Status().recent.empty());
  absl::StatusOr<std::shared_ptr<PlanRounds>> rounds = job->Rounds();
  ASSERT_TRUE(rounds.ok());
  std::vector<int64_t> other(request.load.row(0).begin(), request.load.row(0).end());
  other[0] += 1;
  EXPECT_TRUE((*rounds)->SubmitRow({0, 0}, 0, other).ok());
}

// Waiting ranks hold no thread and end when their call does: a shutdown past its grace does not
// wait for rounds that would take an hour to time out.
TEST(PlannerServiceShutdownTest, CallsWaitingForARoundEndAtTheShutdownDeadline) {
  const auto daemon = LoneDaemon(absl::Hours(1));
  ASSERT_NE(daemon, nullptr);
  const PlanRequest& request = daemon->request();
  Job* job = &daemon->job();
  const auto stub = daemon->PlannerStub();
  grpc::Status unary_status, stream_status;
  std::thread unary([&] {
    taot::v1::ReportLoadRequest row;
    row.set_job_id("job-1");
    row.set_rank(0);
    for (int64_t n : request.load.row(0)) row.add_counts(n);
    grpc::ClientContext context;
    taot::v1::Plan plan;
    unary_status = stub->ReportLoad(&context, row, &plan);
  });
  std::thread stream([&] {
    taot::v1::StreamRequest message;
    message.set_job_id("job-1");
    message.set_rank(1);
    taot::v1::LayerLoad* layer = message.add_layers();
    for (int64_t n : request.load.row(1)) layer->add_counts(n);
    grpc::ClientContext context;
    auto s = stub->Stream(&context);
    s->Write(message);
    taot::v1::StreamResponse response;
    s->Read(&response);
    stream_status = s->Finish();
  });
  absl::StatusOr<std::shared_ptr<PlanRounds>> rounds = job->Rounds();
  ASSERT_TRUE(rounds.ok());
  for (int tries = 0; tries < 1000 && (*rounds)->RowsIn({0, 0}) < 2; ++tries) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ((*rounds)->RowsIn({0, 0}), 2);  // both calls are waiting for the round
  const auto start = std::chrono::steady_clock::now();
  daemon->server().Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  unary.join();
  stream.join();
  EXPECT_FALSE(unary_status.ok());
  EXPECT_FALSE(stream_status.ok());
}

TEST_F(PlannerServiceTest, ABadStreamMessageEndsTheStreamNamingTheLayer) {
  grpc::ClientContext context;
  auto stream = stub_->Stream(&context);
  taot::v1::StreamRequest request;
  request.set_job_id("job-1");
  request.set_rank(0);
  request.set_step(20);
  request.add_layers()->set_layer(0);  // no counts
  ASSERT_TRUE(stream->Write(request));
  stream->WritesDone();
  taot::v1::StreamResponse response;
  EXPECT_FALSE(stream->Read(&response));
  const grpc::Status s = stream->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("layers[0]: load: must have 32 entries"), std::string::npos) << s.error_message();
}

TEST_F(PlannerServiceTest, PrefetchesArePushedForTheNextStepOfEachPlannedLayer) {
  grpc::ClientContext watch_context;
  taot::v1::WatchPrefetchesRequest watch;
  watch.set_job_id("job-1");
  auto reader = stub_->WatchPrefetches(&watch_context, watch);
  const taot::v1::ReportMatrixRequest m = Matrix(30, 2);
  taot::v1::Plan plan;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(stub_->ReportMatrix(&context, m, &plan).ok());
  }
  taot::v1::Prefetch prefetch;
  ASSERT_TRUE(reader->Read(&prefetch));
  EXPECT_EQ(prefetch.step(), 31);
  EXPECT_EQ(prefetch.layer(), 2);
  // The replicas taot places at target 0 on that load.
  PlanRequest zero = request_;
  zero.target_imbalance_pct = 0;
  auto planner = PlannerRegistry::BuiltIn().Create("taot");
  const Plan expected = RunPlanner(**planner, zero)->plan;
  ASSERT_EQ(prefetch.replicas_size(), static_cast<int>(expected.replicas.size()));
  for (int i = 0; i < prefetch.replicas_size(); ++i) {
    EXPECT_EQ(prefetch.replicas(i).expert(), expected.replicas[i].expert);
    EXPECT_EQ(prefetch.replicas(i).rank(), expected.replicas[i].rank);
  }
  EXPECT_EQ(prefetch.hash(), PlanHash(Plan{expected.replicas, {}, false, std::nullopt}));
  watch_context.TryCancel();
  reader->Finish();
}

// Waits up to 10 s for the job's prefetch feed to hold `n` waiting watchers.
bool WatchersBecome(Job& job, size_t n) {
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (absl::Now() < until) {
    absl::StatusOr<std::shared_ptr<PlanRounds>> rounds = job.Rounds();
    if (rounds.ok() && (*rounds)->prefetches().watchers() == n) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return false;
}

TEST_F(PlannerServiceTest, EveryWatcherIsWokenByTheRoundThatPlacesAndWatchesOnForTheNext) {
  // More watchers than gRPC's callback threads: a watch holds none while it waits.
  constexpr int kWatchers = 48;
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  std::vector<std::unique_ptr<grpc::ClientReader<taot::v1::Prefetch>>> readers;
  taot::v1::WatchPrefetchesRequest watch;
  watch.set_job_id("job-1");
  for (int i = 0; i < kWatchers; ++i) {
    contexts.push_back(std::make_unique<grpc::ClientContext>());
    readers.push_back(stub_->WatchPrefetches(contexts.back().get(), watch));
  }
  ASSERT_TRUE(WatchersBecome(*job_, kWatchers));
  for (int64_t step : {40, 41}) {
    grpc::ClientContext context;
    taot::v1::Plan plan;
    ASSERT_TRUE(stub_->ReportMatrix(&context, Matrix(step, 1), &plan).ok());
    for (auto& reader : readers) {
      taot::v1::Prefetch prefetch;
      ASSERT_TRUE(reader->Read(&prefetch));
      EXPECT_EQ(prefetch.step(), step + 1);
      EXPECT_EQ(prefetch.layer(), 1);
    }
  }
  for (auto& context : contexts) context->TryCancel();
  for (auto& reader : readers) EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(PlannerServiceTest, AWatchThatGoesAwayLeavesNoWatcherBehind) {
  grpc::ClientContext context;
  taot::v1::WatchPrefetchesRequest watch;
  watch.set_job_id("job-1");
  auto reader = stub_->WatchPrefetches(&context, watch);
  ASSERT_TRUE(WatchersBecome(*job_, 1));
  context.TryCancel();
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(WatchersBecome(*job_, 0));
}

TEST_F(PlannerServiceTest, AWatchOfAnotherJobIsRefusedAtOnce) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  taot::v1::WatchPrefetchesRequest watch;
  watch.set_job_id("job-2");
  auto reader = stub_->WatchPrefetches(&context, watch);
  taot::v1::Prefetch prefetch;
  EXPECT_FALSE(reader->Read(&prefetch));
  const grpc::Status s = reader->Finish();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(s.error_message().find("unknown job 'job-2'"), std::string::npos) << s.error_message();
}

TEST_F(PlannerServiceTest, AdminShowsStatusSwapsThePlannerAndPlansACase) {
  taot::v1::Plan plan;
  taot::v1::SetPlannerRequest set;
  set.set_planner("magic");
  taot::v1::SetPlannerResponse set_response;
  {
    grpc::ClientContext context;
    const grpc::Status s = admin_->SetPlanner(&context, set, &set_response);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
    EXPECT_NE(s.error_message().find("magic"), std::string::npos);
  }
  set.set_planner("echo");
  {
    grpc::ClientContext context;
    ASSERT_TRUE(admin_->SetPlanner(&context, set, &set_response).ok());
    EXPECT_EQ(set_response.planner_version(), 2u);
  }
  taot::v1::StatusResponse status;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(admin_->GetStatus(&context, taot::v1::StatusRequest(), &status).ok());
  }
  EXPECT_EQ(status.job_id(), "job-1");
  EXPECT_EQ(status.world_size(), 8);
  EXPECT_EQ(status.nodes(), 2);
  EXPECT_EQ(status.planner(), "echo");
  // A dry run of a CASE with another planner; the job keeps echo.
  taot::v1::PlanCaseRequest dry;
  dry.set_case_json(CaseToJson(request_));
  dry.set_planner("taot");
  {
    grpc::ClientContext context;
    const grpc::Status s = admin_->PlanCase(&context, dry, &plan);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  EXPECT_EQ(plan.planner(), "taot");
  EXPECT_GE(plan.replicas_size(), 1);
  dry.set_case_json("{\"topology\": 3}");
  {
    grpc::ClientContext context;
    const grpc::Status s = admin_->PlanCase(&context, dry, &plan);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("case_json: "), std::string::npos) << s.error_message();
  }
  {
    grpc::ClientContext context;
    ASSERT_TRUE(admin_->GetStatus(&context, taot::v1::StatusRequest(), &status).ok());
    EXPECT_EQ(status.planner(), "echo");
  }
}

// A dry run answers for the job's shape only: a case of another world size, E, K or node grouping
// is refused by name, and the job is unchanged.
TEST_F(PlannerServiceTest, ADryRunRefusesACaseOfAnotherShapeThanTheJob) {
  const auto refusal = [&](const std::string& case_json) {
    taot::v1::PlanCaseRequest dry;
    dry.set_case_json(case_json);
    taot::v1::Plan plan;
    grpc::ClientContext context;
    const grpc::Status s = admin_->PlanCase(&context, dry, &plan);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << case_json;
    return s.error_message();
  };
  EXPECT_EQ(refusal(R"({"topology": {"ranks": 2, "ranks_per_node": 2}, "experts": 2, "slots_per_rank": 1,
                        "load": [[90, 10], [80, 10]]})"),
            "case_json: topology.ranks: the daemon's job has world_size = 8, the case 2 (a dry run plans cases of "
            "this job's shape)");
  sim::CaseOptions o;
  o.ranks = 8;
  o.experts = 64;
  o.ranks_per_node = 4;
  EXPECT_NE(refusal(CaseToJson(sim::GenerateCase(o)->request)).find("experts: the daemon's job has experts = 32"),
            std::string::npos);
  o.experts = 32;
  o.slots_per_rank = request_.slots_per_rank() + 1;
  EXPECT_NE(refusal(CaseToJson(sim::GenerateCase(o)->request)).find("slots_per_rank: the daemon's job has slots"),
            std::string::npos);
  o.slots_per_rank = request_.slots_per_rank();
  o.ranks_per_node = request_.topology().nodes() == 1 ? 4 : 8;
  EXPECT_NE(refusal(CaseToJson(sim::GenerateCase(o)->request)).find("grouped into nodes differently"),
            std::string::npos);
}

// A job that learns its topology from registrations.
TEST(RegistrationTest, RanksRegisterOverGrpcAndConflictsAreRefused) {
  JobConfig config;
  config.job_id = "job-r";
  config.world_size = 2;
  config.experts = 4;
  std::unique_ptr<Job> job = *Job::Create(config);
  PlannerService service(*job);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  auto stub = taot::v1::Planner::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  auto reg = [&](int rank, const std::string& node, int world, taot::v1::RegisterRankResponse& out) {
    taot::v1::RegisterRankRequest r;
    r.set_job_id("job-r");
    r.set_rank(rank);
    r.set_world_size(world);
    r.set_node(node);
    grpc::ClientContext context;
    return stub->RegisterRank(&context, r, &out);
  };
  taot::v1::RegisterRankResponse out;
  ASSERT_TRUE(reg(0, "a", 2, out).ok());
  EXPECT_FALSE(out.ready());
  // Planning before everyone registered says so.
  taot::v1::ReportLoadRequest load;
  load.set_job_id("job-r");
  for (int e = 0; e < 4; ++e) load.add_counts(1);
  taot::v1::Plan plan;
  {
    grpc::ClientContext context;
    const grpc::Status s = stub->ReportLoad(&context, load, &plan);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_NE(s.error_message().find("1 of 2 registered"), std::string::npos) << s.error_message();
  }
  EXPECT_EQ(reg(0, "b", 2, out).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_EQ(reg(1, "b", 3, out).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  ASSERT_TRUE(reg(1, "b", 2, out).ok());
  EXPECT_TRUE(out.ready());
  EXPECT_EQ(out.registered(), 2);
  server->Shutdown();
}

}  // namespace
}  // namespace taot::server

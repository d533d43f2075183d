// The daemon's services against requests no well-behaved client sends: bytes that decode as no
// message, with and without the token; Stream messages that would make many rounds; matrices
// whose declared shape lies; cases whose planning throws. Each gets a clear status, is counted,
// and changes nothing.
#include <gtest/gtest.h>

#include <grpcpp/generic/generic_stub.h>

#include <map>
#include <new>
#include <stdexcept>
#include <thread>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "loopback_daemon.h"
#include "taot/planner/case_json.h"
#include "taot/server/planner_service.h"

namespace taot::server {
namespace {

constexpr char kToken[] = "s3cret";

// Counts each RPC's outcomes by status code, as the daemon's requests counter does.
class RequestCounter final : public JobObserver {
 public:
  void OnPlan(const RoundPlan&) override {}
  void OnRegistered(int) override {}
  void OnPlanner(const std::string&, uint64_t) override {}
  void OnRequest(std::string_view rpc, const absl::Status& status) override {
    absl::MutexLock lock(&mu_);
    ++counts_[{std::string(rpc), status.code()}];
  }
  int Count(const std::string& rpc, absl::StatusCode code) {
    absl::MutexLock lock(&mu_);
    return counts_[{rpc, code}];
  }

 private:
  absl::Mutex mu_;
  std::map<std::pair<std::string, absl::StatusCode>, int> counts_ ABSL_GUARDED_BY(mu_);
};

// A planner that throws what a planner running out of memory, or tripping over its input, would.
template <typename Exception>
class Throwing final : public Planner {
 public:
  std::string_view name() const override { return "throwing"; }
  absl::StatusOr<Plan> MakePlan(const PlanRequest&) override { throw Exception(); }
};

struct OutOfRange : std::out_of_range {
  OutOfRange() : std::out_of_range("a number in the case is out of range") {}
};

PlannerRegistry WithThrowingPlanners() {
  PlannerRegistry registry = PlannerRegistry::BuiltIn();
  EXPECT_TRUE(registry
                  .Register({"out-of-memory", "throws std::bad_alloc", {}},
                            [](const PlannerParams&) -> absl::StatusOr<std::unique_ptr<Planner>> {
                              return std::make_unique<Throwing<std::bad_alloc>>();
                            })
                  .ok());
  EXPECT_TRUE(registry
                  .Register({"out-of-range", "throws std::out_of_range", {}},
                            [](const PlannerParams&) -> absl::StatusOr<std::unique_ptr<Planner>> {
                              return std::make_unique<Throwing<OutOfRange>>();
                            })
                  .ok());
  return registry;
}

class ServiceHardeningTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::LoopbackDaemonOptions options;
    options.configure = [this](JobConfig& config) {
      config.round_timeout = absl::Seconds(10);  // rounds here plan complete, however slow the machine
      config.observer = &counter_;
      config.registry = &registry_;
    };
    options.token = kToken;
    daemon_ = testing::LoopbackDaemon::Start(options);
    ASSERT_NE(daemon_, nullptr);
    request_ = daemon_->request();
    job_ = &daemon_->job();
    channel_ = daemon_->Channel();
    generic_ = std::make_unique<grpc::GenericStub>(channel_);
  }

  static void Prepare(grpc::ClientContext& context, bool token) {
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    if (token) context.AddMetadata("authorization", std::string("Bearer ") + kToken);
  }

  // `bytes` as the request of `method`, whatever they are.
  grpc::Status Raw(const std::string& method, const std::string& bytes, bool token) {
    grpc::ClientContext context;
    Prepare(context, token);
    grpc::Slice slice(bytes);
    grpc::ByteBuffer request(&slice, 1), response;
    absl::Notification done;
    grpc::Status status;
    generic_->UnaryCall(&context, method, {}, &request, &response, [&](grpc::Status s) {
      status = std::move(s);
      done.Notify();
    });
    done.WaitForNotification();
    return status;
  }

  // One Stream message and the stream's end: the response's plan count, or the stream's status.
  grpc::Status StreamOnce(const taot::v1::StreamRequest& request, int* plans = nullptr) {
    grpc::ClientContext context;
    Prepare(context, true);
    auto stream = taot::v1::Planner::NewStub(channel_)->Stream(&context);
    stream->Write(request);
    stream->WritesDone();
    taot::v1::StreamResponse response;
    if (stream->Read(&response) && plans != nullptr) *plans = response.plans_size();
    return stream->Finish();
  }

  taot::v1::StreamRequest Layers(int rank, int64_t step, const std::vector<int>& layers) const {
    taot::v1::StreamRequest request;
    request.set_job_id("job-1");
    request.set_rank(rank);
    request.set_step(step);
    for (int layer : layers) {
      taot::v1::LayerLoad* l = request.add_layers();
      l->set_layer(layer);
      for (int64_t n : request_.load.row(rank)) l->add_counts(n);
    }
    return request;
  }

  grpc::Status PlanCase(const std::string& planner, taot::v1::Plan& plan) {
    taot::v1::PlanCaseRequest request;
    request.set_case_json(CaseToJson(request_));
    request.set_planner(planner);
    grpc::ClientContext context;
    Prepare(context, true);
    return taot::v1::Admin::NewStub(channel_)->PlanCase(&context, request, &plan);
  }

  RequestCounter counter_;
  PlannerRegistry registry_ = WithThrowingPlanners();
  std::unique_ptr<testing::LoopbackDaemon> daemon_;
  PlanRequest request_;
  Job* job_ = nullptr;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<grpc::GenericStub> generic_;
};

// gRPC's generated handlers decoded these requests before any of the daemon's code ran, and
// answered INTERNAL with no message, token or not.
TEST_F(ServiceHardeningTest, UndecodableRequestsAreRefusedAfterTheTokenAndCounted) {
  const std::vector<std::pair<std::string, std::string>> rpcs = {
      {"/taot.v1.Planner/RegisterRank", "taot.v1.RegisterRankRequest"},
      {"/taot.v1.Planner/WatchPrefetches", "taot.v1.WatchPrefetchesRequest"},
      {"/taot.v1.Admin/GetStatus", "taot.v1.StatusRequest"},
      {"/taot.v1.Admin/SetPlanner", "taot.v1.SetPlannerRequest"},
      {"/taot.v1.Admin/PlanCase", "taot.v1.PlanCaseRequest"},
  };
  // A varint cut short; a length-delimited field longer than what follows.
  for (const std::string& garbage : {std::string("\xff\xff\xff\xff"), std::string("\x0a\x05"
                                                                                  "ab")}) {
    for (const auto& [method, type] : rpcs) {
      const std::string rpc = method.substr(method.rfind('/') + 1);
      const grpc::Status anonymous = Raw(method, garbage, false);
      EXPECT_EQ(anonymous.error_code(), grpc::StatusCode::UNAUTHENTICATED)
          << method << ": " << anonymous.error_message();
      const grpc::Status refused = Raw(method, garbage, true);
      EXPECT_EQ(refused.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << method << ": " << refused.error_message();
      EXPECT_EQ(refused.error_message(), "request: not a valid " + type + " message") << method;
    }
  }
  for (const auto& [method, type] : rpcs) {
    const std::string rpc = method.substr(method.rfind('/') + 1);
    EXPECT_EQ(counter_.Count(rpc, absl::StatusCode::kUnauthenticated), 2) << rpc;
    EXPECT_EQ(counter_.Count(rpc, absl::StatusCode::kInvalidArgument), 2) << rpc;
  }
  // Nothing changed: no rank registered, the planner is the same.
  const JobStatus status = job_->Status();
  EXPECT_EQ(status.registered, 0);
  EXPECT_EQ(status.planner, "taot");
  EXPECT_EQ(status.planner_version, 1u);
}

TEST_F(ServiceHardeningTest, DecodableRequestsStillWorkThroughTheSameHandlers) {
  taot::v1::StatusRequest request;
  const grpc::Status anonymous = Raw("/taot.v1.Admin/GetStatus", request.SerializeAsString(), false);
  EXPECT_EQ(anonymous.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  grpc::ClientContext context;
  Prepare(context, true);
  taot::v1::StatusResponse response;
  ASSERT_TRUE(taot::v1::Admin::NewStub(channel_)->GetStatus(&context, request, &response).ok());
  EXPECT_EQ(response.job_id(), "job-1");
  EXPECT_EQ(counter_.Count("GetStatus", absl::StatusCode::kOk), 1);
}

// Each layer's row opens a round of R x E counts: a small message naming many layers, or one
// layer again and again, asked for memory far beyond its size.
TEST_F(ServiceHardeningTest, AStreamMessageCarriesEachLayerOnceAndAtMostTheLimit) {
  std::vector<int> too_many(PlannerService::kMaxStreamLayers + 1);
  for (size_t i = 0; i < too_many.size(); ++i) too_many[i] = static_cast<int>(i);
  grpc::Status s = StreamOnce(Layers(0, 5, too_many));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_NE(s.error_message().find("layers: at most 256 per message, got 257"), std::string::npos) << s.error_message();
  s = StreamOnce(Layers(0, 5, {3, 4, 3}));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_NE(s.error_message().find("layers[2]: layer 3 appears twice (first at layers[0])"), std::string::npos)
      << s.error_message();
  // Nothing counted: every rank's one message for step 5 still plans layers 3 and 4 in full.
  std::vector<grpc::Status> statuses(8);
  std::vector<int> plans(8, 0);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 8; ++r) ranks.emplace_back([&, r] { statuses[r] = StreamOnce(Layers(r, 5, {3, 4}), &plans[r]); });
  for (std::thread& t : ranks) t.join();
  for (int r = 0; r < 8; ++r) {
    EXPECT_TRUE(statuses[r].ok()) << statuses[r].error_message();
    EXPECT_EQ(plans[r], 2);
  }
  for (const auto& plan : job_->Status().recent) EXPECT_FALSE(plan->identity.fallback()) << plan->identity.reason;
}

TEST_F(ServiceHardeningTest, AMatrixWhoseDeclaredShapeDisagreesIsRefused) {
  auto report = [&](int ranks, int experts, int counts) {
    taot::v1::ReportMatrixRequest m;
    m.set_job_id("job-1");
    m.set_ranks(ranks);
    m.set_experts(experts);
    for (int i = 0; i < counts; ++i) m.add_counts(1);
    grpc::ClientContext context;
    Prepare(context, true);
    taot::v1::Plan plan;
    return taot::v1::Planner::NewStub(channel_)->ReportMatrix(&context, m, &plan);
  };
  grpc::Status s = report(65536, 65536, 1);  // 2^32 entries declared: the product must not wrap
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("counts: must hold ranks x experts = 65536 x 65536 entries, got 1"),
            std::string::npos)
      << s.error_message();
  s = report(16, 16, 256);  // as many entries as the job's 8 x 32, in another shape
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("load: must be 8 x 32, got 16 x 16"), std::string::npos) << s.error_message();
}

// An exception from planning a case answered UNKNOWN ("Unexpected error in RPC handling").
TEST_F(ServiceHardeningTest, APlanCaseThatThrowsGetsAClearStatus) {
  taot::v1::Plan plan;
  grpc::Status s = PlanCase("out-of-memory", plan);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_NE(s.error_message().find("case_json: needs more memory than the daemon can give"), std::string::npos)
      << s.error_message();
  s = PlanCase("out-of-range", plan);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_NE(s.error_message().find("case_json: cannot be planned: a number in the case is out of range"),
            std::string::npos)
      << s.error_message();
  EXPECT_EQ(counter_.Count("PlanCase", absl::StatusCode::kResourceExhausted), 1);
  ASSERT_TRUE(PlanCase("taot", plan).ok());  // and the daemon serves on
  EXPECT_GT(plan.replicas_size(), 0);
}

}  // namespace
}  // namespace taot::server

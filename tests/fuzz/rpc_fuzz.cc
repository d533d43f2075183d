// Every RPC of taot-planner's services on any request bytes, through the real handlers over an
// in-process channel: the first byte chooses the method and whether the call carries the job's
// token (most do, so that the bytes get past authentication), the rest is the raw request. One
// small job serves every input, so inputs also meet the state earlier ones left (registered
// ranks, open rounds, another planner). Calls have short deadlines and rounds a short timeout:
// a call waiting for ranks that never report ends quickly.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/synchronization/notification.h"
#include "fuzz_support.h"
#include "taot/server/log.h"
#include "taot/server/planner_service.h"

namespace {

using taot::fuzz::Require;

constexpr char kToken[] = "fuzz-token";

struct Method {
  const char* path;
  bool streaming;  // both streaming RPCs run as generic bidi calls: one message, then half-close
};

constexpr std::array<Method, 8> kMethods = {{
    {"/taot.v1.Planner/RegisterRank", false},
    {"/taot.v1.Planner/ReportLoad", false},
    {"/taot.v1.Planner/ReportMatrix", false},
    {"/taot.v1.Planner/Stream", true},
    {"/taot.v1.Planner/WatchPrefetches", true},
    {"/taot.v1.Admin/GetStatus", false},
    {"/taot.v1.Admin/SetPlanner", false},
    {"/taot.v1.Admin/PlanCase", false},
}};

// A job of 4 ranks on 2 nodes (known up front, so rounds open without registrations), 8
// experts, 2 slots, and its services behind a server with no port.
class Daemon {
 public:
  Daemon() {
    taot::server::SetLogLevel(taot::server::LogLevel::kError);
    taot::server::JobConfig config;
    config.job_id = "job-1";
    config.world_size = 4;
    config.experts = 8;
    config.slots_per_rank = 2;
    config.expert_bytes = 1 << 20;
    config.node_of_rank = std::vector<int>{0, 0, 1, 1};
    config.round_timeout = absl::Milliseconds(2);
    config.predictive = true;
    absl::StatusOr<std::unique_ptr<taot::server::Job>> job = taot::server::Job::Create(config);
    Require(job.ok(), "the fuzzed job is created");
    job_ = *std::move(job);
    planner_ = std::make_unique<taot::server::PlannerService>(*job_, kToken);
    admin_ = std::make_unique<taot::server::AdminService>(*job_, kToken);
    grpc::ServerBuilder builder;
    builder.RegisterService(planner_.get());
    builder.RegisterService(admin_.get());
    server_ = builder.BuildAndStart();
    Require(server_ != nullptr, "the in-process server starts");
    stub_ = std::make_unique<grpc::GenericStub>(server_->InProcessChannel(grpc::ChannelArguments()));
  }

  void Call(uint8_t selector, const uint8_t* data, size_t size) {
    const Method& method = kMethods[selector % kMethods.size()];
    grpc::ClientContext context;
    const auto deadline = method.streaming ? std::chrono::milliseconds(20) : std::chrono::milliseconds(200);
    context.set_deadline(std::chrono::system_clock::now() + deadline);
    switch ((selector >> 3) % 8) {
      case 0:
        break;
      case 1:
        context.AddMetadata("authorization", "Bearer not-the-token");
        break;
      default:
        context.AddMetadata("authorization", std::string("Bearer ") + kToken);
    }
    grpc::Slice slice(data, size);
    grpc::ByteBuffer request(&slice, 1);
    const grpc::Status status =
        method.streaming ? Streaming(context, method.path, request) : Unary(context, method.path, request);
    // A refusal says why; only gRPC's own codes (a deadline, a cancelled call) may come bare.
    Require(status.ok() || !status.error_message().empty() ||
                status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
                status.error_code() == grpc::StatusCode::CANCELLED,
            "a refused call gets a message");
  }

 private:
  grpc::Status Unary(grpc::ClientContext& context, const std::string& path, const grpc::ByteBuffer& request) {
    grpc::ByteBuffer response;
    absl::Notification done;
    grpc::Status status;
    stub_->UnaryCall(&context, path, {}, &request, &response, [&](grpc::Status s) {
      status = std::move(s);
      done.Notify();
    });
    done.WaitForNotification();
    return status;
  }

  // Writes the one request, half-closes, and reads whatever comes until the call ends.
  class OneRequest final : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
   public:
    OneRequest(grpc::GenericStub& stub, grpc::ClientContext& context, const std::string& path,
               const grpc::ByteBuffer& request)
        : request_(request) {
      stub.PrepareBidiStreamingCall(&context, path, {}, this);
      StartWriteLast(&request_, grpc::WriteOptions());
      StartRead(&response_);
      StartCall();
    }
    void OnReadDone(bool ok) override {
      if (ok) StartRead(&response_);
    }
    void OnDone(const grpc::Status& status) override {
      status_ = status;
      done_.Notify();
    }
    grpc::Status Wait() {
      done_.WaitForNotification();
      return status_;
    }

   private:
    grpc::ByteBuffer request_, response_;
    grpc::Status status_;
    absl::Notification done_;
  };

  grpc::Status Streaming(grpc::ClientContext& context, const std::string& path, const grpc::ByteBuffer& request) {
    OneRequest call(*stub_, context, path, request);
    return call.Wait();
  }

  std::unique_ptr<taot::server::Job> job_;
  std::unique_ptr<taot::server::PlannerService> planner_;
  std::unique_ptr<taot::server::AdminService> admin_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<grpc::GenericStub> stub_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // Never destroyed: gRPC's threads may still be finishing a call when the process exits.
  static Daemon* daemon = new Daemon();
  daemon->Call(data[0], data + 1, size - 1);
  return 0;
}

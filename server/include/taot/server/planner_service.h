// The gRPC services of taot-planner: taot.v1.Planner (ranks register and plan) and taot.v1.Admin
// (status, planner swaps, dry runs). They turn requests into Job calls and results into
// messages, every domain type through the wire layer (taot/wire); absl errors become gRPC
// statuses with the same code and message, so bad input reads the same on either side.
//
// The planning RPCs (ReportLoad, ReportMatrix, Stream) use gRPC's callback API with raw
// messages: a rank waiting for its round holds no thread, and a round's plan is encoded once
// and the same bytes go to every rank (RoundPlan::Wire).
//
// Every RPC decodes its own request, after the token: gRPC's generated handlers decode first
// and answer INTERNAL, with no message, even to a caller without the token. The other RPCs use
// the "streamed" sync handlers (the request read by our code, on gRPC's sync threads as
// before): PlanCase may plan for seconds and WatchPlacements waits in a loop, neither of which
// belongs on a callback thread.
#pragma once

#include <string>

#include <grpcpp/grpcpp.h>

#include "taot/server/job.h"
#include "taot/v1/planner.grpc.pb.h"

namespace taot::server {

// With a non-empty `token`, every call must carry "authorization: Bearer <token>" (else
// UNAUTHENTICATED, and nothing changes). The health service is separate and needs none.
using PlannerServiceBase = taot::v1::Planner::WithRawCallbackMethod_ReportLoad<
    taot::v1::Planner::WithRawCallbackMethod_ReportMatrix<taot::v1::Planner::WithRawCallbackMethod_Stream<
        taot::v1::Planner::WithStreamedUnaryMethod_RegisterRank<
            taot::v1::Planner::WithSplitStreamingMethod_WatchPlacements<taot::v1::Planner::Service>>>>>;

class PlannerService final : public PlannerServiceBase {
 public:
  // Layers one Stream message may carry, each at most once: every layer's row opens a round of
  // R x E counts, so a small message could otherwise ask for gigabytes.
  static constexpr int kMaxStreamLayers = 256;

  explicit PlannerService(Job& job, std::string token = "") : job_(job), token_(std::move(token)) {}

  grpc::Status StreamedRegisterRank(
      grpc::ServerContext* context,
      grpc::ServerUnaryStreamer<taot::v1::RegisterRankRequest, taot::v1::RegisterRankResponse>* streamer) override;
  grpc::ServerUnaryReactor* ReportLoad(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ReportMatrix(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Stream(grpc::CallbackServerContext* context) override;
  grpc::Status StreamedWatchPlacements(
      grpc::ServerContext* context,
      grpc::ServerSplitStreamer<taot::v1::WatchPlacementsRequest, taot::v1::Placement>* streamer) override;

 private:
  class ReportLoadReactor;
  class StreamReactor;

  absl::Status DoWatchPlacements(
      grpc::ServerContext* context, const taot::v1::WatchPlacementsRequest* request,
      grpc::ServerSplitStreamer<taot::v1::WatchPlacementsRequest, taot::v1::Placement>* writer);
  // The RPCs' bodies; the overrides count each outcome (JobObserver::OnRequest).
  absl::Status DoRegisterRank(grpc::ServerContext* context, const taot::v1::RegisterRankRequest* request,
                              taot::v1::RegisterRankResponse* response);
  // Finishes a callback RPC and counts its outcome.
  void Finish(grpc::ServerUnaryReactor* reactor, std::string_view rpc, const absl::Status& status);
  // The job's rounds for a request naming `job_id`: NOT_FOUND for another job,
  // FAILED_PRECONDITION while ranks are still registering.
  // The rounds of `job_id`'s run `run_id` (empty: the current run).
  absl::StatusOr<std::shared_ptr<PlanRounds>> RoundsFor(const std::string& job_id, const std::string& run_id);

  Job& job_;
  const std::string token_;
};

class AdminService final : public taot::v1::Admin::StreamedUnaryService {
 public:
  explicit AdminService(Job& job, std::string token = "") : job_(job), token_(std::move(token)) {}

  grpc::Status StreamedGetStatus(
      grpc::ServerContext* context,
      grpc::ServerUnaryStreamer<taot::v1::StatusRequest, taot::v1::StatusResponse>* streamer) override;
  grpc::Status StreamedSetPlanner(
      grpc::ServerContext* context,
      grpc::ServerUnaryStreamer<taot::v1::SetPlannerRequest, taot::v1::SetPlannerResponse>* streamer) override;
  grpc::Status StreamedPlanCase(
      grpc::ServerContext* context,
      grpc::ServerUnaryStreamer<taot::v1::PlanCaseRequest, taot::v1::Plan>* streamer) override;

 private:
  absl::Status DoGetStatus(grpc::ServerContext* context, const taot::v1::StatusRequest* request,
                           taot::v1::StatusResponse* response);
  absl::Status DoSetPlanner(grpc::ServerContext* context, const taot::v1::SetPlannerRequest* request,
                            taot::v1::SetPlannerResponse* response);
  absl::Status DoPlanCase(grpc::ServerContext* context, const taot::v1::PlanCaseRequest* request,
                          taot::v1::Plan* response);

  Job& job_;
  const std::string token_;
};

// The gRPC status for an absl one: same code, same message.
grpc::Status ToGrpc(const absl::Status& status);

// A round's result as the wire message (its plan, identity and scorecard by the wire layer);
// `with_lists` false leaves out replicas and assignments.
void ToProto(const RoundPlan& plan, taot::v1::Plan& out, bool with_lists = true);

// ToProto, serialized: a taot.v1.Plan's bytes (RoundPlan::Wire's encoder).
std::string EncodePlan(const RoundPlan& plan);

}  // namespace taot::server

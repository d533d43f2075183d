// The gRPC services of taot-planner: taot.v1.Planner (ranks register and plan) and taot.v1.Admin
// (status, planner swaps, dry runs). They turn requests into Job calls and results into
// messages; absl errors become gRPC statuses with the same code and message, so bad input reads
// the same on either side.
//
// The planning RPCs (ReportLoad, ReportMatrix, Stream) use gRPC's callback API with raw
// messages: a rank waiting for its round holds no thread, and a round's plan is encoded once
// and the same bytes go to every rank (RoundPlan::Wire).
#pragma once

#include <string>

#include <grpcpp/grpcpp.h>

#include "taot/server/job.h"
#include "taot/v1/planner.grpc.pb.h"

namespace taot::server {

// With a non-empty `token`, every call must carry "authorization: Bearer <token>" (else
// UNAUTHENTICATED, and nothing changes). The health service is separate and needs none.
using PlannerServiceBase = taot::v1::Planner::WithRawCallbackMethod_ReportLoad<
    taot::v1::Planner::WithRawCallbackMethod_ReportMatrix<
        taot::v1::Planner::WithRawCallbackMethod_Stream<taot::v1::Planner::Service>>>;

class PlannerService final : public PlannerServiceBase {
 public:
  explicit PlannerService(Job& job, std::string token = "") : job_(job), token_(std::move(token)) {}

  grpc::Status RegisterRank(grpc::ServerContext* context, const taot::v1::RegisterRankRequest* request,
                            taot::v1::RegisterRankResponse* response) override;
  grpc::ServerUnaryReactor* ReportLoad(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ReportMatrix(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Stream(grpc::CallbackServerContext* context) override;
  grpc::Status WatchPlacements(grpc::ServerContext* context, const taot::v1::WatchPlacementsRequest* request,
                               grpc::ServerWriter<taot::v1::Placement>* writer) override;

 private:
  class ReportLoadReactor;
  class StreamReactor;

  absl::Status DoWatchPlacements(grpc::ServerContext* context, const taot::v1::WatchPlacementsRequest* request,
                                 grpc::ServerWriter<taot::v1::Placement>* writer);
  // The RPCs' bodies; the overrides count each outcome (JobObserver::OnRequest).
  absl::Status DoRegisterRank(grpc::ServerContext* context, const taot::v1::RegisterRankRequest* request,
                              taot::v1::RegisterRankResponse* response);
  // Finishes a callback RPC and counts its outcome.
  void Finish(grpc::ServerUnaryReactor* reactor, std::string_view rpc, const absl::Status& status);
  // The job's rounds for a request naming `job_id`: NOT_FOUND for another job,
  // FAILED_PRECONDITION while ranks are still registering.
  absl::StatusOr<PlanRounds*> RoundsFor(const std::string& job_id);

  Job& job_;
  const std::string token_;
};

class AdminService final : public taot::v1::Admin::Service {
 public:
  explicit AdminService(Job& job, std::string token = "") : job_(job), token_(std::move(token)) {}

  grpc::Status GetStatus(grpc::ServerContext* context, const taot::v1::StatusRequest* request,
                         taot::v1::StatusResponse* response) override;
  grpc::Status SetPlanner(grpc::ServerContext* context, const taot::v1::SetPlannerRequest* request,
                          taot::v1::SetPlannerResponse* response) override;
  grpc::Status PlanCase(grpc::ServerContext* context, const taot::v1::PlanCaseRequest* request,
                        taot::v1::Plan* response) override;

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

// A round's result as the wire message; `with_lists` false leaves out replicas and assignments.
void ToProto(const RoundPlan& plan, taot::v1::Plan& out, bool with_lists = true);

// ToProto, serialized: a taot.v1.Plan's bytes (RoundPlan::Wire's encoder).
std::string EncodePlan(const RoundPlan& plan);

}  // namespace taot::server

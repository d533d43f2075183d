// The gRPC services of taot-planner: taot.v1.Planner (ranks register and plan) and taot.v1.Admin
// (status, planner swaps, dry runs). They turn requests into Job calls and results into
// messages, every domain type through the wire layer (taot/wire); absl errors become gRPC
// statuses with the same code and message, so bad input reads the same on either side.
//
// Every RPC uses gRPC's callback API with raw messages: a rank waiting for its round, or
// watching for prefetches, holds no thread; a round's plan is encoded once and the same bytes go
// to every rank (RoundPlan::Wire); a watch is woken by the round that places (PrefetchFeed).
//
// Every RPC decodes its own request, after the token: gRPC's generated handlers decode first
// and answer INTERNAL, with no message, even to a caller without the token. The unary RPCs that
// wait for nothing (RegisterRank, ReportMatrix and the Admin service) answer within the
// callback; ReportMatrix and PlanCase plan there, on gRPC's callback thread.
#pragma once

#include <string>

#include <grpcpp/grpcpp.h>

#include "taot/server/job.h"
#include "taot/v1/planner.grpc.pb.h"

namespace taot::server {

// With a non-empty `token`, every call must carry "authorization: Bearer <token>" (else
// UNAUTHENTICATED, and nothing changes). The health service is separate and needs none.
using PlannerServiceBase =
    taot::v1::Planner::WithRawCallbackMethod_ReportLoad<taot::v1::Planner::WithRawCallbackMethod_ReportMatrix<
        taot::v1::Planner::WithRawCallbackMethod_Stream<taot::v1::Planner::WithRawCallbackMethod_RegisterRank<
            taot::v1::Planner::WithRawCallbackMethod_WatchPrefetches<taot::v1::Planner::Service>>>>>;

class PlannerService final : public PlannerServiceBase {
 public:
  // Layers one Stream message may carry, each at most once: every layer's row opens a round of
  // R x E counts, so a small message could otherwise ask for gigabytes.
  static constexpr int kMaxStreamLayers = 256;

  explicit PlannerService(Job& job, std::string token = "") : job_(job), token_(std::move(token)) {}

  grpc::ServerUnaryReactor* RegisterRank(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ReportLoad(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ReportMatrix(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;
  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* Stream(grpc::CallbackServerContext* context) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* WatchPrefetches(grpc::CallbackServerContext* context,
                                                              const grpc::ByteBuffer* request) override;

 private:
  class ReportLoadReactor;
  class StreamReactor;
  class WatchReactor;

  absl::Status DoRegisterRank(const taot::v1::RegisterRankRequest& request, taot::v1::RegisterRankResponse& response);
  // Finishes a callback RPC and counts its outcome.
  void Finish(grpc::ServerUnaryReactor* reactor, std::string_view rpc, const absl::Status& status);
  // The rounds of `job_id`'s run `run_id` (empty: the current run): NOT_FOUND for another job,
  // FAILED_PRECONDITION while ranks are still registering.
  absl::StatusOr<std::shared_ptr<PlanRounds>> RoundsFor(const std::string& job_id, const std::string& run_id);

  Job& job_;
  const std::string token_;
};

using AdminServiceBase =
    taot::v1::Admin::WithRawCallbackMethod_GetStatus<taot::v1::Admin::WithRawCallbackMethod_SetPlanner<
        taot::v1::Admin::WithRawCallbackMethod_PlanCase<taot::v1::Admin::Service>>>;

class AdminService final : public AdminServiceBase {
 public:
  explicit AdminService(Job& job, std::string token = "") : job_(job), token_(std::move(token)) {}

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* SetPlanner(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                       grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* PlanCase(grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;

 private:
  absl::Status DoGetStatus(taot::v1::StatusResponse& response);
  absl::Status DoSetPlanner(const taot::v1::SetPlannerRequest& request, taot::v1::SetPlannerResponse& response);
  absl::Status DoPlanCase(const taot::v1::PlanCaseRequest& request, taot::v1::Plan& response);

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

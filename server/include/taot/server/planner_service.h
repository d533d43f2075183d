// The taot.v1.Planner gRPC service: the remote planning mode over PlanRounds. Turns requests
// into rounds' rows and PlanRounds' results into Plan messages; absl errors become gRPC
// statuses with the same code and message, so bad input reads the same on either side.
#pragma once

#include <string>

#include <grpcpp/grpcpp.h>

#include "taot/server/plan_rounds.h"
#include "taot/v1/planner.grpc.pb.h"

namespace taot::server {

class PlannerService final : public taot::v1::Planner::Service {
 public:
  // Serves one job: requests naming another job are NOT_FOUND.
  PlannerService(std::string job_id, PlanRounds& rounds) : job_id_(std::move(job_id)), rounds_(rounds) {}

  grpc::Status ReportLoad(grpc::ServerContext* context, const taot::v1::ReportLoadRequest* request,
                          taot::v1::Plan* response) override;
  grpc::Status ReportMatrix(grpc::ServerContext* context, const taot::v1::ReportMatrixRequest* request,
                            taot::v1::Plan* response) override;

 private:
  grpc::Status CheckJob(const std::string& job_id) const;

  const std::string job_id_;
  PlanRounds& rounds_;
};

// The gRPC status for an absl one: same code, same message.
grpc::Status ToGrpc(const absl::Status& status);

// A round's result as the wire message.
void ToProto(const RoundPlan& plan, taot::v1::Plan& out);

}  // namespace taot::server

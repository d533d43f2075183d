// A daemon for one EP8 job on a loopback port, as the service tests need it: the job, the Planner
// and Admin services, the server, and channels to it. Every test that talks to the services over
// real gRPC starts one, so that they differ only in what they configure.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "taot/planner/plan_request.h"
#include "taot/server/job.h"
#include "taot/server/planner_service.h"

namespace taot::server::testing {

struct LoopbackDaemonOptions {
  // The case every round plans: 8 ranks in `ranks_per_node`-rank nodes, 32 experts, K = 2.
  int ranks_per_node = 4;
  // Adjusts the job ("job-1", world 8, the case's shape and topology) before it is created.
  std::function<void(JobConfig&)> configure;
  // The bearer token both services demand ("" = none).
  std::string token;
  // Server options beyond the listening port and the services (message sizes, keepalive).
  std::function<void(grpc::ServerBuilder&)> build;
};

class LoopbackDaemon {
 public:
  // Starts it; fails the calling test and returns nullptr when it cannot.
  static std::unique_ptr<LoopbackDaemon> Start(const LoopbackDaemonOptions& options = {});
  ~LoopbackDaemon();

  const PlanRequest& request() const { return request_; }
  Job& job() { return *job_; }
  grpc::Server& server() { return *server_; }
  int port() const { return port_; }
  // A new insecure channel to the server.
  std::shared_ptr<grpc::Channel> Channel() const;
  std::unique_ptr<taot::v1::Planner::Stub> PlannerStub() const;
  std::unique_ptr<taot::v1::Admin::Stub> AdminStub() const;

 private:
  LoopbackDaemon() = default;

  PlanRequest request_;
  std::unique_ptr<Job> job_;
  std::unique_ptr<PlannerService> planner_service_;
  std::unique_ptr<AdminService> admin_service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

}  // namespace taot::server::testing

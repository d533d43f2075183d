#include "loopback_daemon.h"

#include <chrono>

#include <gtest/gtest.h>

#include "taot/sim/case_generator.h"

namespace taot::server::testing {

std::unique_ptr<LoopbackDaemon> LoopbackDaemon::Start(const LoopbackDaemonOptions& options) {
  std::unique_ptr<LoopbackDaemon> daemon(new LoopbackDaemon);
  sim::CaseOptions o;
  o.ranks = 8;
  o.experts = 32;
  o.ranks_per_node = options.ranks_per_node;
  o.imbalance = 0.6;
  daemon->request_ = sim::GenerateCase(o)->request;
  JobConfig config;
  config.job_id = "job-1";
  config.world_size = 8;
  config.experts = daemon->request_.experts();
  config.slots_per_rank = daemon->request_.slots_per_rank();
  config.expert_bytes = daemon->request_.expert_bytes();
  config.node_of_rank = daemon->request_.topology().node_of_rank();
  if (options.configure) options.configure(config);
  auto job = Job::Create(config);
  if (!job.ok()) {
    ADD_FAILURE() << "job: " << job.status();
    return nullptr;
  }
  daemon->job_ = *std::move(job);
  daemon->planner_service_ = std::make_unique<PlannerService>(*daemon->job_, options.token);
  daemon->admin_service_ = std::make_unique<AdminService>(*daemon->job_, options.token);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &daemon->port_);
  builder.RegisterService(daemon->planner_service_.get());
  builder.RegisterService(daemon->admin_service_.get());
  if (options.build) options.build(builder);
  daemon->server_ = builder.BuildAndStart();
  if (daemon->server_ == nullptr) {
    ADD_FAILURE() << "the loopback server did not start";
    return nullptr;
  }
  return daemon;
}

LoopbackDaemon::~LoopbackDaemon() {
  // Calls still open (a watch, a stream) are cancelled after a second rather than waited for.
  if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
}

std::shared_ptr<grpc::Channel> LoopbackDaemon::Channel() const {
  return grpc::CreateChannel("127.0.0.1:" + std::to_string(port_), grpc::InsecureChannelCredentials());
}

std::unique_ptr<taot::v1::Planner::Stub> LoopbackDaemon::PlannerStub() const {
  return taot::v1::Planner::NewStub(Channel());
}

std::unique_ptr<taot::v1::Admin::Stub> LoopbackDaemon::AdminStub() const { return taot::v1::Admin::NewStub(Channel()); }

}  // namespace taot::server::testing

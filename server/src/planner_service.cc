#include "taot/server/planner_service.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace taot::server {
namespace {

// The call's deadline as an absl::Time (none: wait as long as the round takes).
absl::Time CallDeadline(const grpc::ServerContext& context) {
  const std::chrono::system_clock::time_point deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

}  // namespace

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

void ToProto(const RoundPlan& plan, taot::v1::Plan& out) {
  out.set_step(plan.key.step);
  out.set_layer(plan.key.layer);
  for (const Replica& r : plan.plan.replicas) {
    taot::v1::Replica* m = out.add_replicas();
    m->set_expert(r.expert);
    m->set_rank(r.rank);
  }
  for (const Assignment& a : plan.plan.assignments) {
    taot::v1::Assignment* m = out.add_assignments();
    m->set_source(a.source);
    m->set_expert(a.expert);
    m->set_rank(a.rank);
    m->set_tokens(a.tokens);
  }
  out.set_version(plan.version);
  out.set_hash(plan.hash);
  out.set_planner(plan.planner);
  out.set_fallback(plan.fallback);
  out.set_fallback_reason(plan.reason);
  taot::v1::PlanStats* stats = out.mutable_stats();
  const Scorecard& s = plan.score;
  stats->set_imbalance_before_pct(s.imbalance_before_pct);
  stats->set_imbalance_after_pct(s.imbalance_after_pct);
  stats->set_intra_node_transfers(s.intra_node_transfers);
  stats->set_inter_node_transfers(s.inter_node_transfers);
  stats->set_weighted_cost(s.weighted_cost);
  stats->set_target_met(s.target_met);
  stats->set_plan_time_us(s.plan_time_us);
  stats->set_bytes_moved_intra_node(s.bytes_moved_intra_node);
  stats->set_bytes_moved_inter_node(s.bytes_moved_inter_node);
  stats->set_tokens_inter_node(s.tokens_inter_node);
}

grpc::Status PlannerService::CheckJob(const std::string& job_id) const {
  if (job_id == job_id_) return grpc::Status::OK;
  return grpc::Status(grpc::StatusCode::NOT_FOUND,
                      absl::StrCat("job_id: unknown job '", job_id, "' (this daemon serves '", job_id_, "')"));
}

grpc::Status PlannerService::ReportLoad(grpc::ServerContext* context, const taot::v1::ReportLoadRequest* request,
                                        taot::v1::Plan* response) {
  if (grpc::Status s = CheckJob(request->job_id()); !s.ok()) return s;
  const auto& counts = request->counts();
  absl::StatusOr<std::shared_ptr<const RoundPlan>> plan =
      rounds_.ReportRow({request->step(), request->layer()}, request->rank(),
                        std::span<const int64_t>(counts.data(), static_cast<size_t>(counts.size())),
                        CallDeadline(*context));
  if (!plan.ok()) return ToGrpc(plan.status());
  ToProto(**plan, *response);
  return grpc::Status::OK;
}

grpc::Status PlannerService::ReportMatrix(grpc::ServerContext*, const taot::v1::ReportMatrixRequest* request,
                                          taot::v1::Plan* response) {
  if (grpc::Status s = CheckJob(request->job_id()); !s.ok()) return s;
  const int64_t ranks = request->ranks(), experts = request->experts();
  if (ranks <= 0 || experts <= 0 || ranks * experts != request->counts_size()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("counts: must hold ranks x experts = ", ranks, " x ", experts, " entries, got ",
                                     request->counts_size()));
  }
  LoadMatrix load(static_cast<int>(ranks), static_cast<int>(experts));
  for (int s = 0; s < ranks; ++s) {
    for (int e = 0; e < experts; ++e) load.at(s, e) = request->counts(static_cast<int>(s * experts + e));
  }
  absl::StatusOr<std::shared_ptr<const RoundPlan>> plan = rounds_.ReportMatrix({request->step(), request->layer()}, load);
  if (!plan.ok()) return ToGrpc(plan.status());
  ToProto(**plan, *response);
  return grpc::Status::OK;
}

}  // namespace taot::server

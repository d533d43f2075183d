#include "taot/server/metrics.h"

#include "absl/status/status.h"

namespace taot::server {
namespace {

// Plan latency buckets: 1 us to ~1 s, doubling (plans take microseconds to milliseconds).
const prometheus::Histogram::BucketBoundaries& PlanBuckets() {
  static const prometheus::Histogram::BucketBoundaries kBuckets = [] {
    prometheus::Histogram::BucketBoundaries b;
    for (double s = 1e-6; s < 2; s *= 2) b.push_back(s);
    return b;
  }();
  return kBuckets;
}

}  // namespace

Metrics::Metrics(prometheus::Registry& r)
    : plan_seconds_(prometheus::BuildHistogram()
                        .Name("taot_plan_duration_seconds")
                        .Help("The planner's own time per plan")
                        .Register(r)),
      plans_(prometheus::BuildCounter()
                 .Name("taot_plans_total")
                 .Help("Rounds planned, by planner and outcome (planned, or fallback: no replication)")
                 .Register(r)),
      requests_(
          prometheus::BuildCounter().Name("taot_requests_total").Help("RPCs by method and status code").Register(r)),
      imbalance_before_(prometheus::BuildGauge()
                            .Name("taot_layer_imbalance_before_ratio")
                            .Help("(max - mean) / mean rank load of the layer's latest round, before the plan")
                            .Register(r)),
      imbalance_after_(prometheus::BuildGauge()
                           .Name("taot_layer_imbalance_after_ratio")
                           .Help("(max - mean) / mean rank load of the layer's latest round, after the plan")
                           .Register(r)),
      replicas_(prometheus::BuildCounter()
                    .Name("taot_replica_transfers_total")
                    .Help("New replica weight transfers, inside a node or across nodes")
                    .Register(r)),
      weighted_cost_(prometheus::BuildCounter()
                         .Name("taot_weighted_cost_total")
                         .Help("Sum of the plans' weighted transfer cost (intra + lambda x inter)")
                         .Register(r)),
      bytes_moved_(prometheus::BuildCounter()
                       .Name("taot_weight_bytes_moved_total")
                       .Help("Replica weight bytes the plans move, inside a node or across nodes")
                       .Register(r)),
      tokens_(prometheus::BuildCounter()
                  .Name("taot_tokens_dispatched_total")
                  .Help("Tokens by where they are computed relative to their source rank")
                  .Register(r)),
      registered_ranks_(prometheus::BuildGauge()
                            .Name("taot_registered_ranks")
                            .Help("Ranks registered with the job")
                            .Register(r)
                            .Add({})),
      planner_info_(prometheus::BuildGauge()
                        .Name("taot_planner_info")
                        .Help("The active planner (1) and its configuration version")
                        .Register(r)) {}

void Metrics::OnPlan(const RoundPlan& plan) {
  const Scorecard& s = plan.score;
  plan_seconds_.Add({{"planner", plan.planner}}, PlanBuckets()).Observe(s.plan_time_us * 1e-6);
  plans_.Add({{"planner", plan.planner}, {"outcome", plan.identity.fallback() ? "fallback" : "planned"}}).Increment();
  const std::string layer = std::to_string(plan.key.layer);
  imbalance_before_.Add({{"layer", layer}}).Set(s.imbalance_before_pct / 100);
  imbalance_after_.Add({{"layer", layer}}).Set(s.imbalance_after_pct / 100);
  replicas_.Add({{"placement", "intra_node"}}).Increment(s.intra_node_transfers);
  replicas_.Add({{"placement", "inter_node"}}).Increment(s.inter_node_transfers);
  weighted_cost_.Add({}).Increment(s.weighted_cost);
  bytes_moved_.Add({{"placement", "intra_node"}}).Increment(static_cast<double>(s.bytes_moved_intra_node));
  bytes_moved_.Add({{"placement", "inter_node"}}).Increment(static_cast<double>(s.bytes_moved_inter_node));
  tokens_.Add({{"placement", "local"}}).Increment(static_cast<double>(s.tokens_local));
  tokens_.Add({{"placement", "intra_node"}}).Increment(static_cast<double>(s.tokens_intra_node));
  tokens_.Add({{"placement", "inter_node"}}).Increment(static_cast<double>(s.tokens_inter_node));
}

void Metrics::OnRequest(std::string_view rpc, const absl::Status& status) {
  requests_.Add({{"rpc", std::string(rpc)}, {"code", absl::StatusCodeToString(status.code())}}).Increment();
}

void Metrics::OnRegistered(int ranks) { registered_ranks_.Set(ranks); }

void Metrics::OnPlanner(const std::string& name, uint64_t version) {
  absl::MutexLock lock(&mu_);
  if (active_planner_ != nullptr) planner_info_.Remove(active_planner_);
  active_planner_ = &planner_info_.Add({{"planner", name}, {"version", std::to_string(version)}});
  active_planner_->Set(1);
}

}  // namespace taot::server

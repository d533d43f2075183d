// The daemon's Prometheus metrics (served on their own port, docs/operations.md lists them).
// Names follow docs/design.md ("Conventions"): prefix taot_, base units, _total on counters; labels are bounded
// (planner, outcome, rpc, code, layer, placement), never one per expert.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "taot/server/job.h"

namespace taot::server {

class Metrics final : public JobObserver {
 public:
  explicit Metrics(prometheus::Registry& registry);

  // One planned round: latency, outcome, its layer's imbalance, transfers, bytes and tokens.
  void OnPlan(const RoundPlan& plan) override;
  void OnRegistered(int ranks) override;
  void OnPlanner(const std::string& name, uint64_t version) override;
  void OnRequest(std::string_view rpc, const absl::Status& status) override;

 private:
  prometheus::Family<prometheus::Histogram>& plan_seconds_;
  prometheus::Family<prometheus::Counter>& plans_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Gauge>& imbalance_before_;
  prometheus::Family<prometheus::Gauge>& imbalance_after_;
  prometheus::Family<prometheus::Counter>& replicas_;
  prometheus::Family<prometheus::Counter>& weighted_cost_;
  prometheus::Family<prometheus::Counter>& bytes_moved_;
  prometheus::Family<prometheus::Counter>& tokens_;
  prometheus::Gauge& registered_ranks_;
  prometheus::Family<prometheus::Gauge>& planner_info_;
  absl::Mutex mu_;
  prometheus::Gauge* active_planner_ ABSL_GUARDED_BY(mu_) = nullptr;
};

}  // namespace taot::server

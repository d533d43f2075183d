// What the PlanRounds tests share: rounds for a request's job, and the answers their WhenSettled
// callbacks got.
#pragma once

#include <memory>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "taot/server/plan_rounds.h"

namespace taot::server {

// The rounds' configuration for `request`'s job, its rounds timing out after `timeout`.
inline RoundsConfig ConfigFor(const PlanRequest& request, absl::Duration timeout) {
  RoundsConfig config;
  config.problem = request.problem;
  config.round_timeout = timeout;
  return config;
}

// WhenSettled's answers, as they arrive.
class Answers {
 public:
  PlanRounds::SettledCallback Callback() {
    return [this](std::shared_ptr<const RoundPlan> plan) {
      absl::MutexLock lock(&mu_);
      plans_.push_back(std::move(plan));
    };
  }
  size_t count() const {
    absl::MutexLock lock(&mu_);
    return plans_.size();
  }
  // Waits up to `timeout` for `n` answers; all of them.
  std::vector<std::shared_ptr<const RoundPlan>> Await(size_t n, absl::Duration timeout) const {
    absl::MutexLock lock(&mu_);
    auto enough = [&] { return plans_.size() >= n; };
    mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
    return plans_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<std::shared_ptr<const RoundPlan>> plans_;
};

}  // namespace taot::server

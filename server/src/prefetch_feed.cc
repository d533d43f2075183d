#include "taot/server/prefetch_feed.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "taot/planner/plan_hash.h"

namespace taot::server {

bool PrefetchFeed::on() const {
  absl::MutexLock lock(&mu_);
  return on_;
}

void PrefetchFeed::Place(RoundKey planned, const PlanRequest& request, const PlannerSlot& slot, absl::Time deadline) {
  // As taot-sim's predictive mode: aim for no residual, since prefetched weights never stall
  // and more replicas let the split follow loads that drift from the prediction. The copy of the
  // loads is the feed's own: the round's request stays as the ranks reported it.
  PlanRequest aim = request;
  aim.target_imbalance_pct = 0;
  absl::StatusOr<ScoredPlan> scored = slot.Plan(aim, deadline);
  if (!scored.ok()) return;
  Prefetch prefetch;
  prefetch.key = {planned.step + 1, planned.layer};
  prefetch.replicas = std::move(scored->plan.replicas);
  prefetch.identity = {slot.version(), PlanHash(Plan{prefetch.replicas, {}, false, std::nullopt}),
                       Provenance::kPushedReplicas, ""};
  Publish(std::move(prefetch));
}

void PrefetchFeed::Publish(Prefetch prefetch) {
  std::vector<std::pair<Callback, Prefetches>> ready;
  {
    absl::MutexLock lock(&mu_);
    prefetch.sequence = ++sequence_;
    kept_.push_back(std::make_shared<const Prefetch>(std::move(prefetch)));
    if (kept_.size() > kKept) kept_.erase(kept_.begin(), kept_.end() - kKept);
    for (auto& [id, watcher] : watchers_) ready.emplace_back(std::move(watcher.ready), After(watcher.after));
    watchers_.clear();
  }
  for (auto& [callback, prefetches] : ready) callback(std::move(prefetches));
}

uint64_t PrefetchFeed::WhenPublished(uint64_t after, Callback ready) {
  Prefetches now;
  uint64_t id;
  {
    absl::MutexLock lock(&mu_);
    on_ = true;
    id = ++next_id_;
    if (sequence_ <= after) {
      watchers_[id] = {after, std::move(ready)};
      return id;
    }
    now = After(after);
  }
  ready(std::move(now));
  return id;
}

void PrefetchFeed::Forget(uint64_t id) {
  absl::MutexLock lock(&mu_);
  watchers_.erase(id);
}

size_t PrefetchFeed::watchers() const {
  absl::MutexLock lock(&mu_);
  return watchers_.size();
}

PrefetchFeed::Prefetches PrefetchFeed::After(uint64_t after) const {
  // Sequences count up along kept_: the first one above `after` starts the answer.
  const auto first =
      std::partition_point(kept_.begin(), kept_.end(), [after](const auto& p) { return p->sequence <= after; });
  return {first, kept_.end()};
}

}  // namespace taot::server

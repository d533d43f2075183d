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

void PrefetchFeed::Place(std::span<const RoundKey> planned, std::span<const PlanRequest* const> requests,
                         const PlannerSlot& slot, absl::Time deadline) {
  // As taot-sim's predictive mode: aim for no residual, since prefetched weights never stall
  // and more replicas let the split follow loads that drift from the prediction. The copies of
  // the loads are the feed's own: the rounds' requests stay as the ranks reported them.
  std::vector<PlanRequest> aims(requests.size());
  std::vector<const PlanRequest*> batch;
  for (size_t i = 0; i < requests.size(); ++i) {
    aims[i] = *requests[i];
    aims[i].target_imbalance_pct = 0;
    batch.push_back(&aims[i]);
  }
  std::vector<absl::StatusOr<ScoredPlan>> scored = slot.PlanBatch(batch, deadline);
  std::vector<Prefetch> placed;
  for (size_t i = 0; i < scored.size(); ++i) {
    if (!scored[i].ok()) continue;
    Prefetch& prefetch = placed.emplace_back();
    prefetch.key = {planned[i].step + 1, planned[i].layer};
    prefetch.replicas = std::move(scored[i]->plan.replicas);
    prefetch.identity = {slot.version(), PlanHash(Plan{prefetch.replicas, {}, false, std::nullopt}),
                         Provenance::kPushedReplicas, ""};
  }
  if (!placed.empty()) Publish(std::move(placed));
}

void PrefetchFeed::Publish(std::vector<Prefetch> published) {
  std::vector<std::pair<Callback, Prefetches>> ready;
  {
    absl::MutexLock lock(&mu_);
    for (Prefetch& prefetch : published) {
      prefetch.sequence = ++sequence_;
      kept_.push_back(std::make_shared<const Prefetch>(std::move(prefetch)));
    }
    if (kept_.size() > kKept) kept_.erase(kept_.begin(), kept_.end() - kKept);
    for (auto& [id, watcher] : watchers_) ready.emplace_back(std::move(watcher.ready), After(watcher.after));
    watchers_.clear();
  }
  for (auto& [callback, batch] : ready) callback(std::move(batch));
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

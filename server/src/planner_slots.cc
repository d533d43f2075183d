#include "taot/server/planner_slots.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "taot/server/log.h"

namespace taot::server {

PlannerSlot::PlannerSlot(std::string name, PlannerParams params, uint64_t version, std::unique_ptr<Planner> planner,
                         int threads, Factory more)
    : PlannerSlot(std::move(name), std::move(params), version, std::make_shared<Turns>()) {
  turns_->planners.push_back(std::move(planner));
  turns_->more = std::move(more);
  if (threads > 1 && turns_->more) turns_->workers = std::make_unique<BatchWorkers>(threads);
}

PlannerSlot::PlannerSlot(std::string name, PlannerParams params, uint64_t version, std::shared_ptr<Turns> turns)
    : name_(std::move(name)), params_(std::move(params)), version_(version), turns_(std::move(turns)) {}

absl::Status PlannerSlot::TakeTurn(absl::Time deadline) const {
  Turns& turns = *turns_;
  absl::MutexLock lock(&turns.mu);
  auto free = [&turns]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(turns.mu) { return !turns.busy; };
  if (!turns.mu.AwaitWithDeadline(absl::Condition(&free), deadline)) {
    return absl::DeadlineExceededError(absl::StrCat("planner ", name_, " is still busy with an earlier request"));
  }
  turns.busy = true;
  return absl::OkStatus();
}

void PlannerSlot::GiveTurn() const {
  absl::MutexLock lock(&turns_->mu);
  turns_->busy = false;
}

std::vector<absl::StatusOr<ScoredPlan>> PlannerSlot::PlanBatch(std::span<const PlanRequest* const> requests,
                                                               absl::Time deadline) const {
  if (absl::Status s = TakeTurn(deadline); !s.ok()) return std::vector<absl::StatusOr<ScoredPlan>>(requests.size(), s);
  Turns& turns = *turns_;
  const bool spread = turns.workers != nullptr && turns.planners.front()->batching() == Planner::Batching::kSpread;
  size_t parts = spread ? std::min(requests.size(), static_cast<size_t>(turns.workers->threads())) : 1;
  // An instance for each part, made once; a factory that fails leaves fewer parts.
  while (turns.planners.size() < parts) {
    absl::StatusOr<std::unique_ptr<Planner>> another = turns.more();
    if (!another.ok()) break;
    turns.planners.push_back(*std::move(another));
  }
  parts = std::min(parts, turns.planners.size());
  std::vector<absl::StatusOr<ScoredPlan>> scored;
  if (parts <= 1) {
    scored = RunPlannerBatch(*turns.planners.front(), requests);
  } else {
    scored.assign(requests.size(), absl::UnknownError("not planned"));
    // Part i takes requests i, i + parts, ...: layers that cost more than others (a burst in some
    // of them) spread over the parts.
    turns.workers->Run(static_cast<int>(parts), [&](int i) {
      std::vector<const PlanRequest*> mine;
      for (size_t j = static_cast<size_t>(i); j < requests.size(); j += parts) mine.push_back(requests[j]);
      std::vector<absl::StatusOr<ScoredPlan>> part = RunPlannerBatch(*turns.planners[static_cast<size_t>(i)], mine);
      for (size_t k = 0; k < part.size(); ++k) scored[static_cast<size_t>(i) + k * parts] = std::move(part[k]);
    });
  }
  GiveTurn();
  return scored;
}

std::shared_ptr<const PlannerSlot> PlannerSlot::Renumbered(uint64_t version) const {
  return std::shared_ptr<const PlannerSlot>(new PlannerSlot(name_, params_, version, turns_));
}

PlannerSlots::PlannerSlots(const PlannerRegistry& registry, DroppedCallback on_dropped, int threads)
    : registry_(registry), on_dropped_(std::move(on_dropped)), threads_(threads) {}

absl::Status PlannerSlots::Set(const std::string& name, const PlannerParams& params, std::optional<uint64_t> version) {
  // Created outside the lock: a plugin's planner may take a while.
  absl::StatusOr<std::unique_ptr<Planner>> planner = registry_.CreateRunnable(name, params);
  if (!planner.ok()) return planner.status();
  absl::MutexLock lock(&mu_);
  const uint64_t v = version.value_or(current_ == nullptr ? 1 : current_->version() + 1);
  previous_ = std::move(current_);
  PlannerSlot::Factory more = [&registry = registry_, name, params] { return registry.CreateRunnable(name, params); };
  current_ = std::make_shared<const PlannerSlot>(name, params, v, *std::move(planner), threads_, std::move(more));
  return absl::OkStatus();
}

std::shared_ptr<const PlannerSlot> PlannerSlots::current() const {
  absl::MutexLock lock(&mu_);
  return current_;
}

PlannerInUse PlannerSlots::in_use() const {
  absl::MutexLock lock(&mu_);
  return {current_->name(), current_->version(), current_->params()};
}

void PlannerSlots::Drop(const std::shared_ptr<const PlannerSlot>& failing, std::string& reason) {
  absl::MutexLock lock(&mu_);
  if (failing != current_ || previous_ == nullptr) return;
  absl::StrAppend(&reason, "; back to planner ", previous_->name());
  Log(LogLevel::kError, "planner failed; back to the previous one",
      {{"planner", failing->name()}, {"previous", previous_->name()}, {"reason", reason}});
  current_ = previous_->Renumbered(current_->version() + 1);
  previous_.reset();
  if (on_dropped_) on_dropped_(current_->name(), current_->version());
}

}  // namespace taot::server

// The planner a job's rounds plan with, and the one before it. A swap (SetPlanner) keeps the
// planner in use as the one to fall back to; a planner that fails on a round (a plugin's invalid
// plan, a hang) is dropped for it. Every configuration put in use gets a version above all
// before it, the fallen-back-to one included, so a version never names two configurations and
// ranks comparing (version, hash) never mistake one for the other.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "taot/planner/plan_request.h"
#include "taot/planner/planner.h"
#include "taot/planner/registry.h"
#include "taot/planner/run_planner.h"
#include "taot/server/batch_workers.h"

namespace taot::server {

// One planner configuration. Immutable but for the planner's own state: planners keep
// buffers, so the slots that share a planner take turns with it (Plan).
class PlannerSlot {
 public:
  // Makes another instance of the planner, for a batch spread over threads.
  using Factory = std::function<absl::StatusOr<std::unique_ptr<Planner>>()>;
  // `planner` is the first instance; with `threads` above 1, a batch of a planner that allows it
  // (Planner::batching) is spread over that many threads, each with an instance of its own made
  // by `more` when first needed.
  PlannerSlot(std::string name, PlannerParams params, uint64_t version, std::unique_ptr<Planner> planner,
              int threads = 1, Factory more = nullptr);

  const std::string& name() const { return name_; }
  const PlannerParams& params() const { return params_; }
  uint64_t version() const { return version_; }

  // RunPlannerBatch on requests ready together (validated, timed, checked, scored: one launch
  // for a planner on a device; spread over the slot's threads for a planner that allows it, part
  // i taking requests i, i + parts, ...), once the planner is free; out[i] is requests[i]'s. If
  // the planner is still busy with an earlier batch at `deadline` (a planner that hangs), every
  // one is DEADLINE_EXCEEDED, so that callers never queue up behind it.
  std::vector<absl::StatusOr<ScoredPlan>> PlanBatch(std::span<const PlanRequest* const> requests,
                                                    absl::Time deadline) const;

  // The same planner (and its turns) under another version.
  std::shared_ptr<const PlannerSlot> Renumbered(uint64_t version) const;

 private:
  // The planner and whose turn it is. The lock is held only to take and give back the turn, never
  // while planning, so a caller waiting for a turn can give up at its deadline.
  struct Turns {
    absl::Mutex mu;
    bool busy ABSL_GUARDED_BY(mu) = false;
    // The instances (the first always there), used by whoever has the turn.
    std::vector<std::unique_ptr<Planner>> planners;
    Factory more;
    std::unique_ptr<BatchWorkers> workers;  // with more than one thread
  };
  PlannerSlot(std::string name, PlannerParams params, uint64_t version, std::shared_ptr<Turns> turns);
  // Waits until the planner is free and takes it; DEADLINE_EXCEEDED at `deadline`.
  absl::Status TakeTurn(absl::Time deadline) const;
  void GiveTurn() const;

  std::string name_;
  PlannerParams params_;
  uint64_t version_;
  std::shared_ptr<Turns> turns_;
};

// The planner in use, its configuration version and parameters.
struct PlannerInUse {
  std::string name;
  uint64_t version = 0;
  PlannerParams params;
};

class PlannerSlots {
 public:
  // `on_dropped` is called (under the slots' lock: keep it short; metrics) with the planner that
  // replaces a failing one.
  using DroppedCallback = std::function<void(const std::string& name, uint64_t version)>;
  // Each planner put in use spreads a batch over `threads` threads where it allows it.
  PlannerSlots(const PlannerRegistry& registry, DroppedCallback on_dropped, int threads = 1);

  // Creates `name` from the registry and puts it in use: with `version`, or with the next one
  // after the planner in use. On error (the registry's) nothing changes.
  absl::Status Set(const std::string& name, const PlannerParams& params,
                   std::optional<uint64_t> version = std::nullopt);

  // The planner in use; null before the first Set.
  std::shared_ptr<const PlannerSlot> current() const;
  PlannerInUse in_use() const;

  // Replaces `failing` by the planner before it, under the next version, when `failing` is still
  // in use and there is one to go back to; then `reason` says so ("; back to planner NAME").
  void Drop(const std::shared_ptr<const PlannerSlot>& failing, std::string& reason);

 private:
  const PlannerRegistry& registry_;
  const DroppedCallback on_dropped_;
  const int threads_;
  mutable absl::Mutex mu_;
  std::shared_ptr<const PlannerSlot> current_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<const PlannerSlot> previous_ ABSL_GUARDED_BY(mu_);
};

}  // namespace taot::server

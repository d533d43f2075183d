// The predictive mode's feed (docs/integration.md): once a round is planned, the replicas to
// prefetch for the same layer's next step, placed from the round's loads. Ranks split their
// actual tokens over them at the layer (SplitOverReplicas), with no planner call on the
// critical path. Watchers are called back as prefetches are published: a watching rank holds
// no thread and nobody polls.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "taot/planner/plan.h"
#include "taot/planner/plan_identity.h"
#include "taot/planner/plan_request.h"
#include "taot/server/planner_slots.h"
#include "taot/server/round_key.h"

namespace taot::server {

// The replicas to prefetch for a coming round.
struct Prefetch {
  RoundKey key;  // the round it is for
  std::vector<Replica> replicas;
  // kPushedReplicas, the planner configuration's version; the hash is PlanHash of a plan with
  // these replicas and no assignments.
  PlanIdentity identity;
  uint64_t sequence = 0;  // counts up from 1 over everything published
};

class PrefetchFeed {
 public:
  // The latest prefetches kept for a watcher that comes late or falls behind.
  static constexpr size_t kKept = 4096;
  using Prefetches = std::vector<std::shared_ptr<const Prefetch>>;
  using Callback = std::function<void(Prefetches)>;

  // `on`: place from the start; otherwise from the first watcher on.
  explicit PrefetchFeed(bool on) : on_(on) {}

  // Whether planned rounds should Place.
  bool on() const;

  // Places the round after each of `planned` (the same layer's next step) with `slot`'s planner
  // on that round's request (`requests[i]`), aiming for no residual, and publishes it. Rounds
  // planned together are placed together, in one batch (one launch on a device). Nothing for a
  // round whose placement fails: its own plan is out, and a missing prefetch costs nothing (the
  // layer plans locally); nothing at all when the planner is still busy at `deadline`. Call
  // without locks held: watchers are called back on this thread.
  void Place(std::span<const RoundKey> planned, std::span<const PlanRequest* const> requests, const PlannerSlot& slot,
             absl::Time deadline);

  // Gives each of `prefetches` the next sequence number, then calls back the watchers once.
  void Publish(std::vector<Prefetch> prefetches);

  // Calls `ready` once with every kept prefetch above sequence `after`, oldest first, as soon as
  // there is one: within this call when there is already, else on the thread that publishes it,
  // outside the feed's lock. Turns placing on. The id is Forget's.
  uint64_t WhenPublished(uint64_t after, Callback ready);

  // Drops a watcher not called back yet (its call went away); one called already is not there.
  void Forget(uint64_t id);

  // Watchers not called back yet: a call that went away (Forget) leaves none behind.
  size_t watchers() const;

 private:
  struct Watcher {
    uint64_t after = 0;
    Callback ready;
  };
  Prefetches After(uint64_t after) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  bool on_ ABSL_GUARDED_BY(mu_);
  Prefetches kept_ ABSL_GUARDED_BY(mu_);  // oldest first
  uint64_t sequence_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  std::map<uint64_t, Watcher> watchers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace taot::server

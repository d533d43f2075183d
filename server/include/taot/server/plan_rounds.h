// The remote planning mode's core: every rank reports its load row for a (step, layer) (a
// round); the round is planned once, when its last row arrives, and every rank gets the same
// plan, version and hash. A round still missing rows at its deadline gets an explicit
// no-replication plan, flagged, for every waiting rank and for every rank that arrives later.
// The rounds plan with their PlannerSlots and, in the predictive mode, feed their PrefetchFeed.
// gRPC-free: the service wraps it, and the tests drive it directly.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/call_once.h"
#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "taot/planner/load_matrix.h"
#include "taot/planner/plan.h"
#include "taot/planner/plan_identity.h"
#include "taot/planner/plan_request.h"
#include "taot/planner/problem.h"
#include "taot/planner/registry.h"
#include "taot/planner/scorecard.h"
#include "taot/server/planner_slots.h"
#include "taot/server/prefetch_feed.h"
#include "taot/server/round_key.h"

namespace taot::server {

// What every rank of a round receives.
struct RoundPlan {
  RoundKey key;
  Plan plan;  // canonical
  Scorecard score;
  // kDaemonRound, its version the planner configuration's (SetPlanner counts up); or
  // kNoReplication (version 0) because rows were missing at the deadline or the planner failed,
  // the reason saying which.
  PlanIdentity identity;
  std::string planner;  // its name ("none" for the fallback)
  // The plan's wire form, made once by the first caller of Wire and shared by every rank's
  // answer: R ranks get the same bytes without R encodings.
  const std::string& Wire(const std::function<std::string(const RoundPlan&)>& encode) const {
    absl::call_once(wire_once_, [&] { wire_ = encode(*this); });
    return wire_;
  }

 private:
  mutable absl::once_flag wire_once_;
  mutable std::string wire_;
};

// The most threads a batch is planned on (RoundsConfig::planning_threads).
inline constexpr int kMaxPlanningThreads = 256;

struct RoundsConfig {
  // The job's problem, shared by every round's request.
  std::shared_ptr<const Problem> problem;
  // A round's deadline runs from its first row; its planner gets as long again from its last row.
  absl::Duration round_timeout = absl::Milliseconds(100);
  int max_layers = 1024;
  // Rounds of steps older than (newest step - keep_steps) are dropped; a row for one is stale.
  int64_t keep_steps = 2;
  // A row for a step more than this ahead of the newest step is refused (OUT_OF_RANGE): one bad
  // step must not make every later row of the job stale.
  int64_t max_step_ahead = 1024;
  // The load matrices of the rounds kept (R x E x 8 bytes each) stay under this: settled rounds
  // of the oldest steps go first, and a row that would need more is refused (RESOURCE_EXHAUSTED).
  int64_t max_round_bytes = int64_t{1} << 30;
  // Called once for every round when its plan is published (under the rounds' lock: keep it
  // short; metrics).
  std::function<void(const RoundPlan&)> on_plan;
  // Called (under the rounds' lock) when a failing planner is dropped for the previous one.
  std::function<void(const std::string& name, uint64_t version)> on_planner_dropped;
  // Where planners come from by name (built-ins, and plugins the daemon registered).
  const PlannerRegistry* registry = &PlannerRegistry::BuiltIn();
  // Place every planned layer's next step from the start (else from the feed's first watcher).
  bool place = false;
  // Threads a batch of rounds (and of placements) is planned on, for a planner that allows it
  // (Planner::batching): the same plans, sooner.
  int planning_threads = 1;
};

class PlanRounds {
 public:
  // Checks the configuration and creates the planner (its configuration version is
  // `version`); errors name the field.
  static absl::StatusOr<std::unique_ptr<PlanRounds>> Create(RoundsConfig config, const std::string& planner,
                                                            const PlannerParams& params = {}, uint64_t version = 1);

  // Swaps the planner (the next round to be planned uses it; a round being planned finishes with
  // the old one). On error the old planner stays. A planner that later fails on a round (a
  // plugin's invalid plan) is dropped for the one before it, and the round gets the fallback.
  absl::Status SetPlanner(const std::string& name, const PlannerParams& params);

  // Answers every waiting callback with the fallback ("the daemon is stopping").
  ~PlanRounds();

  // Rank `rank`'s row of the round; blocks until the round is planned or its deadline passes
  // (then the fallback), or until `wait_until` (then DEADLINE_EXCEEDED; the row still counts).
  // Reporting the same row again (a retry) is allowed; a different row is FAILED_PRECONDITION.
  // Bad input is INVALID_ARGUMENT naming the field and changes nothing; a row for a dropped
  // round is FAILED_PRECONDITION ("stale step").
  absl::StatusOr<std::shared_ptr<const RoundPlan>> ReportRow(RoundKey key, int rank, std::span<const int64_t> row,
                                                             absl::Time wait_until);

  // ReportRow in two halves, for a caller that reports several rounds before waiting on any
  // (a stream carrying all layers of a microbatch): the row counts at SubmitRow.
  class Ticket;
  absl::StatusOr<Ticket> SubmitRow(RoundKey key, int rank, std::span<const int64_t> row);
  // Rank `rank`'s rows of several layers of one step (a stream message: a microbatch's layers).
  // Every row is checked before any counts, so a refused call changes nothing; errors name the
  // row as layers[i]. The rounds these rows complete are planned together, in one batch (one
  // launch for a planner on a device). tickets[i] is rows[i]'s.
  struct LayerRow {
    int32_t layer = 0;
    std::span<const int64_t> row;
  };
  absl::StatusOr<std::vector<Ticket>> SubmitRows(int64_t step, int rank, std::span<const LayerRow> rows);
  absl::StatusOr<std::shared_ptr<const RoundPlan>> Await(const Ticket& ticket, absl::Time wait_until);
  // Await without a thread: calls `done` once with the round's plan when the round settles
  // (planned, or its deadline passed with rows missing: the fallback). `done` runs outside the
  // rounds' lock, on the thread that settled the round (the call that brought its last row, or
  // the rounds' deadline timer), or within this call when the round is already settled. A
  // gRPC callback service answers from it, so a waiting rank holds no thread.
  using SettledCallback = std::function<void(std::shared_ptr<const RoundPlan>)>;
  void WhenSettled(const Ticket& ticket, SettledCallback done);

  // The whole R x E matrix of a round at once (a trainer that all-gathered it); rows already
  // reported must match it.
  absl::StatusOr<std::shared_ptr<const RoundPlan>> ReportMatrix(RoundKey key, LoadMatrix load);

  // The predictive feed. Once it is on (RoundsConfig::place, or its first watcher), every
  // planned round also places its layer's next step: the thread that planned the round does it,
  // after the round's plan is out.
  PrefetchFeed& prefetches() { return prefetches_; }

  PlannerInUse planner() const { return planners_.in_use(); }

  // How many ranks have reported their rows of a live round (0 for one not started or dropped).
  int RowsIn(RoundKey key) const;

  // The most recent planned rounds, newest first, at most `n`.
  std::vector<std::shared_ptr<const RoundPlan>> RecentPlans(size_t n) const;

 private:
  enum class State { kCollecting, kPlanning, kDone };
  struct Round {
    PlanRequest request;  // the job's problem and the rows reported so far
    std::vector<char> reported;
    int missing = 0;
    int64_t total = 0;  // tokens in the rows so far, at most kMaxTotalTokens
    absl::Time deadline;
    State state = State::kCollecting;
    // While planning: the planner, and when its waiters get the fallback if it has not finished.
    std::shared_ptr<const PlannerSlot> planning_slot;
    absl::Time planning_deadline = absl::InfiniteFuture();
    std::shared_ptr<const RoundPlan> result;
    std::vector<SettledCallback> waiters;  // WhenSettled's, answered at Publish
  };

  explicit PlanRounds(RoundsConfig config);
  absl::Status CheckKey(RoundKey key) const;
  // The round for `key`, created on first use; stale keys fail. Shared: a caller waiting on a
  // round keeps it alive when newer steps drop it from the map.
  absl::StatusOr<std::shared_ptr<Round>> FindOrCreate(RoundKey key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a round of `step` may be created: not stale, not too far ahead.
  absl::Status CheckNewStep(int64_t step) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes `count` new rounds of `step` (CheckNewStep passed), when there is room for all of them.
  absl::StatusOr<std::vector<std::shared_ptr<Round>>> CreateRounds(int64_t step, std::span<const int32_t> layers)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // SubmitRow and SubmitRows: every row checked, then counted (name_rows: errors name the row as
  // layers[i]); ReportMatrix past its argument checks.
  absl::StatusOr<std::vector<Ticket>> Submit(int64_t step, int rank, std::span<const LayerRow> rows, bool name_rows)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::shared_ptr<const RoundPlan>> ReportCheckedMatrix(RoundKey key, LoadMatrix load)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Plans complete rounds together (one batch) outside the lock and publishes the results.
  using KeyedRound = std::pair<RoundKey, std::shared_ptr<Round>>;
  void PlanTogether(std::span<const KeyedRound> rounds) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts a checked row into a collecting round (the round's total has room for it); true
  // when it was the round's last.
  bool CountRow(Round& round, int rank, std::span<const int64_t> row, int64_t row_total)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::shared_ptr<const RoundPlan> Fallback(RoundKey key, const PlanRequest& request, std::string reason) const;
  absl::StatusOr<std::shared_ptr<const RoundPlan>> Await(RoundKey key, Round& round, absl::Time wait_until)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Settles the round; its callbacks go to settled_, for RunSettled once the lock is released.
  void Publish(Round& round, std::shared_ptr<const RoundPlan> result) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunSettled() ABSL_LOCKS_EXCLUDED(mu_);
  // Publishes the fallback of every round with callbacks that is still collecting at its deadline
  // (all of them when stopping).
  void RunTimer() ABSL_LOCKS_EXCLUDED(mu_);
  // Runs `slot`'s planner on `requests` (one batch) with the rounds' lock released: other
  // rounds go on meanwhile, and the timer answers these if the planner is late. A planner still
  // busy at `deadline` (hung on an earlier round) is not waited for past it.
  std::vector<absl::StatusOr<ScoredPlan>> PlanUnlocked(const PlannerSlot& slot,
                                                       std::span<const PlanRequest* const> requests,
                                                       absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Frees the room for `count` more rounds' load matrices, dropping settled rounds of the oldest
  // steps.
  absl::Status MakeRoom(int64_t count) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Forget(std::map<RoundKey, std::shared_ptr<Round>>::iterator first,
              std::map<RoundKey, std::shared_ptr<Round>>::iterator last) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Feeds the prefetches of the rounds after planned ones, with the rounds' lock released.
  void Place(std::span<const RoundKey> keys, std::span<const PlanRequest* const> planned, const PlannerSlot& slot)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const RoundsConfig config_;
  PlannerSlots planners_;
  PrefetchFeed prefetches_;
  mutable absl::Mutex mu_;
  std::map<RoundKey, std::shared_ptr<Round>> rounds_ ABSL_GUARDED_BY(mu_);
  int64_t round_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // the load matrices of rounds_
  int64_t newest_step_ ABSL_GUARDED_BY(mu_) = -1;
  std::vector<std::shared_ptr<const RoundPlan>> recent_ ABSL_GUARDED_BY(mu_);
  // Callbacks whose rounds settled, with their plans, waiting for the lock's release.
  std::vector<std::pair<SettledCallback, std::shared_ptr<const RoundPlan>>> settled_ ABSL_GUARDED_BY(mu_);
  // The rounds with callbacks that were collecting when the timer last looked.
  std::vector<std::pair<RoundKey, std::shared_ptr<Round>>> timed_ ABSL_GUARDED_BY(mu_);
  absl::Time timer_wakes_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::CondVar timer_cv_;
  std::thread timer_;
};

// A submitted row's round, kept alive until awaited.
class PlanRounds::Ticket {
 private:
  friend class PlanRounds;
  Ticket(RoundKey key, std::shared_ptr<Round> round) : key_(key), round_(std::move(round)) {}
  RoundKey key_;
  std::shared_ptr<Round> round_;
};

}  // namespace taot::server

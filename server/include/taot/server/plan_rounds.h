// The remote planning mode's core: every rank reports its load row for a (step, layer) (a
// round); the round is planned once, when its last row arrives, and every rank gets the same
// plan, version and hash. A round still missing rows at its deadline gets an explicit
// no-replication plan, flagged, for every waiting rank and for every rank that arrives later.
// gRPC-free: the service (issue 4) wraps it, and the tests drive it directly.
#pragma once

#include <compare>
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
#include "taot/planner/planner.h"
#include "taot/planner/registry.h"
#include "taot/planner/run_planner.h"
#include "taot/planner/scorecard.h"
#include "taot/planner/problem.h"

namespace taot::server {

struct RoundKey {
  int64_t step = 0;
  int32_t layer = 0;
  auto operator<=>(const RoundKey&) const = default;
};

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

// The predictive mode's push (DESIGN.md): the replicas to prefetch for a coming (step, layer),
// placed from the loads of the same layer's latest planned round. Ranks split their actual
// tokens over them at the layer (SplitOverReplicas), with no planner call on the critical path.
struct Placement {
  RoundKey key;  // the round it is for
  std::vector<Replica> replicas;
  // kPushedReplicas; the hash is PlanHash of a plan with these replicas and no assignments.
  PlanIdentity identity;
  uint64_t sequence = 0;  // counts up from 1 over everything published
};

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
  // Place every planned layer's next step from the start (else from the first WaitPlacements).
  bool place = false;
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

  // Placements with a sequence above `after`, oldest first, waiting until one exists or
  // `wait_until` passes (then none). While a caller is waiting or has waited recently, every
  // planned round also places its layer's next step (the planning rank's thread does it after
  // the round's plan is out).
  std::vector<std::shared_ptr<const Placement>> WaitPlacements(uint64_t after, absl::Time wait_until);

  // The planner in use, its configuration version and parameters.
  struct PlannerInUse {
    std::string name;
    uint64_t version = 0;
    PlannerParams params;
  };
  PlannerInUse planner() const;

  // How many ranks have reported their rows of a live round (0 for one not started or dropped).
  int RowsIn(RoundKey key) const;

  // The most recent planned rounds, newest first, at most `n`.
  std::vector<std::shared_ptr<const RoundPlan>> RecentPlans(size_t n) const;

 private:
  struct PlannerSlot {
    std::string name;
    PlannerParams params;
    uint64_t version = 0;
    std::unique_ptr<Planner> planner;
    absl::Mutex mu;  // planners keep buffers: one plan at a time each
  };
  enum class State { kCollecting, kPlanning, kDone };
  struct Round {
    PlanRequest request;  // the job's problem and the rows reported so far
    std::vector<char> reported;
    int missing = 0;
    int64_t total = 0;  // tokens in the rows so far, at most kMaxTotalTokens
    absl::Time deadline;
    State state = State::kCollecting;
    // While planning: the planner, and when its waiters get the fallback if it has not finished.
    std::shared_ptr<PlannerSlot> planning_slot;
    absl::Time planning_deadline = absl::InfiniteFuture();
    std::shared_ptr<const RoundPlan> result;
    std::vector<SettledCallback> waiters;  // WhenSettled's, answered at Publish
  };

  explicit PlanRounds(RoundsConfig config) : config_(std::move(config)) {}
  absl::Status SetPlanner(const std::string& name, const PlannerParams& params, uint64_t version);
  absl::Status CheckKey(RoundKey key) const;
  // The round for `key`, created on first use; stale keys fail. Shared: a caller waiting on a
  // round keeps it alive when newer steps drop it from the map.
  absl::StatusOr<std::shared_ptr<Round>> FindOrCreate(RoundKey key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // SubmitRow and ReportMatrix past their argument checks.
  absl::StatusOr<Ticket> SubmitCheckedRow(RoundKey key, int rank, std::span<const int64_t> row) ABSL_LOCKS_EXCLUDED(mu_);
  absl::StatusOr<std::shared_ptr<const RoundPlan>> ReportCheckedMatrix(RoundKey key, LoadMatrix load)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Plans a complete round outside the lock and publishes the result.
  void PlanRound(RoundKey key, Round& round) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::shared_ptr<const RoundPlan> Fallback(RoundKey key, const PlanRequest& request, std::string reason) const;
  absl::StatusOr<std::shared_ptr<const RoundPlan>> Await(RoundKey key, Round& round, absl::Time wait_until)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Settles the round; its callbacks go to settled_, for RunSettled once the lock is released.
  void Publish(Round& round, std::shared_ptr<const RoundPlan> result) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunSettled() ABSL_LOCKS_EXCLUDED(mu_);
  // Publishes the fallback of every round with callbacks that is still collecting at its deadline
  // (all of them when stopping).
  void RunTimer() ABSL_LOCKS_EXCLUDED(mu_);
  // Runs `slot`'s planner on `request` with the rounds' lock released; DEADLINE_EXCEEDED when the
  // planner is still busy with another round at `deadline`.
  absl::StatusOr<ScoredPlan> PlanUnlocked(PlannerSlot& slot, const PlanRequest& request, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Replaces a failing or hung planner by the one before it, if `slot` is still in use and there
  // is one; the replacement gets the next version (versions only count up).
  void DropPlanner(const std::shared_ptr<PlannerSlot>& slot, std::string& reason) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Frees the room for one more round's load matrix, dropping settled rounds of the oldest steps.
  absl::Status MakeRoom() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Forget(std::map<RoundKey, std::shared_ptr<Round>>::iterator first,
              std::map<RoundKey, std::shared_ptr<Round>>::iterator last) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Places (step + 1, layer) from a planned round's loads, outside the lock, and publishes it.
  void Place(RoundKey key, const PlanRequest& planned, PlannerSlot& slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const RoundsConfig config_;
  mutable absl::Mutex mu_;
  std::map<RoundKey, std::shared_ptr<Round>> rounds_ ABSL_GUARDED_BY(mu_);
  int64_t round_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // the load matrices of rounds_
  int64_t newest_step_ ABSL_GUARDED_BY(mu_) = -1;
  std::vector<std::shared_ptr<const RoundPlan>> recent_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<PlannerSlot> planner_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<PlannerSlot> previous_ ABSL_GUARDED_BY(mu_);  // what a failing planner falls back to
  // The predictive push: on once anyone waits for placements; the latest ones, oldest first.
  bool placing_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::shared_ptr<const Placement>> placements_ ABSL_GUARDED_BY(mu_);
  uint64_t placement_sequence_ ABSL_GUARDED_BY(mu_) = 0;
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

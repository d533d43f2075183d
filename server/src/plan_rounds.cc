#include "taot/server/plan_rounds.h"

#include <algorithm>
#include <iterator>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "taot/planner/plan_hash.h"
#include "taot/planner/plan_request.h"
#include "taot/planner/run_planner.h"
#include "taot/server/log.h"

namespace taot::server {
namespace {

constexpr size_t kRecentPlans = 64;
// Steps beyond this are refused: step + 1 (the predictive push's round) never overflows, and a
// trainer at a billion steps a second would take years to reach it.
constexpr int64_t kMaxStep = int64_t{1} << 53;

int64_t RoundBytes(const RoundsConfig& config) {
  return int64_t{config.problem->ranks()} * config.problem->experts * static_cast<int64_t>(sizeof(int64_t));
}

// The row's range rules, as ValidateRequest has them; the error names the entry.
absl::Status CheckRow(std::span<const int64_t> row, int experts) {
  if (row.size() != static_cast<size_t>(experts)) {
    return absl::InvalidArgumentError(
        absl::StrCat("load: must have ", experts, " entries (one per expert), got ", row.size()));
  }
  if (const std::optional<size_t> e = FirstOutOfRange(row)) {
    return absl::InvalidArgumentError(
        absl::StrCat("load[", *e, "]: must be in [0, ", kMaxTokensPerEntry, "], got ", row[*e]));
  }
  return absl::OkStatus();
}

// Entries are at most 2^40 and rows at most 2^16 long (ValidateRequest's limits): no overflow.
int64_t RowTotal(std::span<const int64_t> row) { return std::accumulate(row.begin(), row.end(), int64_t{0}); }

// The round's total with `added` more tokens stays within the planner's limit.
absl::Status CheckTotal(int64_t total, int64_t added) {
  if (added > kMaxTotalTokens - total) {
    return absl::InvalidArgumentError(absl::StrCat("load: the round's rows would hold more than ", kMaxTotalTokens,
                                                   " tokens in all (the planner's limit)"));
  }
  return absl::OkStatus();
}

bool SameRow(const LoadMatrix& load, int rank, std::span<const int64_t> row) {
  return std::equal(row.begin(), row.end(), load.row(rank).begin());
}

}  // namespace

absl::StatusOr<std::unique_ptr<PlanRounds>> PlanRounds::Create(RoundsConfig config, const std::string& planner,
                                                               const PlannerParams& params, uint64_t version) {
  if (config.problem == nullptr) return absl::InvalidArgumentError("problem: must be set");
  if (absl::Status s = ValidateProblem(*config.problem); !s.ok()) return s;
  if (config.round_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("round_timeout: must be positive");
  }
  if (config.max_layers <= 0) return absl::InvalidArgumentError("max_layers: must be >= 1");
  if (config.planning_threads < 1 || config.planning_threads > kMaxPlanningThreads) {
    return absl::InvalidArgumentError(
        absl::StrCat("planning_threads: must be in [1, ", kMaxPlanningThreads, "], got ", config.planning_threads));
  }
  if (config.keep_steps < 0) return absl::InvalidArgumentError("keep_steps: must be >= 0");
  if (config.max_step_ahead < 0) return absl::InvalidArgumentError("max_step_ahead: must be >= 0");
  if (config.max_round_bytes < RoundBytes(config)) {
    return absl::InvalidArgumentError(absl::StrCat("max_round_bytes: must hold one round (", RoundBytes(config),
                                                   " bytes), got ", config.max_round_bytes));
  }
  std::unique_ptr<PlanRounds> rounds(new PlanRounds(std::move(config)));
  if (absl::Status s = rounds->planners_.Set(planner, params, version); !s.ok()) return s;
  rounds->timer_ = std::thread([r = rounds.get()] { r->RunTimer(); });
  return rounds;
}

PlanRounds::PlanRounds(RoundsConfig config)
    : config_(std::move(config)),
      planners_(*config_.registry, config_.on_planner_dropped, config_.planning_threads),
      prefetches_(config_.place) {}

PlanRounds::~PlanRounds() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    timer_cv_.Signal();
  }
  if (timer_.joinable()) timer_.join();
}

void PlanRounds::RunTimer() {
  absl::MutexLock lock(&mu_);
  while (true) {
    const absl::Time now = absl::Now();
    absl::Time next = absl::InfiniteFuture();
    std::erase_if(timed_, [&](const auto& entry) {
      const auto& [key, round] = entry;
      if (round->state == State::kDone) return true;
      const bool collecting = round->state == State::kCollecting;
      const absl::Time due = collecting ? round->deadline : round->planning_deadline;
      if (!stopping_ && now < due) {
        next = std::min(next, due);
        return false;
      }
      std::string reason;
      if (stopping_) {
        reason = "the daemon is stopping";
      } else if (collecting) {
        reason = absl::StrCat(round->missing, " of ", config_.problem->ranks(),
                              " ranks had not reported at the round's deadline");
      } else {
        // Whatever the planner does (a plugin that hangs), the round's ranks are answered; its
        // late plan is dropped.
        reason = absl::StrCat("planner ", round->planning_slot->name(), " had not finished within the round timeout (",
                              absl::FormatDuration(config_.round_timeout), ")");
        planners_.Drop(round->planning_slot, reason);
      }
      Publish(*round, Fallback(key, round->request, std::move(reason)));
      return true;
    });
    if (!settled_.empty()) {
      mu_.Unlock();
      RunSettled();
      mu_.Lock();
      continue;
    }
    if (stopping_) return;
    timer_wakes_ = next;
    timer_cv_.WaitWithDeadline(&mu_, next);
    timer_wakes_ = absl::InfiniteFuture();
  }
}

void PlanRounds::RunSettled() {
  std::vector<std::pair<SettledCallback, std::shared_ptr<const RoundPlan>>> ready;
  {
    absl::MutexLock lock(&mu_);
    ready.swap(settled_);
  }
  for (auto& [done, plan] : ready) done(std::move(plan));
}

void PlanRounds::WhenSettled(const Ticket& ticket, SettledCallback done) {
  std::shared_ptr<const RoundPlan> settled;
  {
    absl::MutexLock lock(&mu_);
    Round& round = *ticket.round_;
    if (round.state != State::kDone) {
      round.waiters.push_back(std::move(done));
      if (round.waiters.size() == 1) {
        timed_.emplace_back(ticket.key_, ticket.round_);
        const absl::Time due = round.state == State::kCollecting ? round.deadline : round.planning_deadline;
        if (due < timer_wakes_) timer_cv_.Signal();
      }
      return;
    }
    settled = round.result;
  }
  done(std::move(settled));
}

absl::Status PlanRounds::SetPlanner(const std::string& name, const PlannerParams& params) {
  return planners_.Set(name, params);
}

absl::Status PlanRounds::CheckKey(RoundKey key) const {
  if (key.step < 0 || key.step > kMaxStep) {
    return absl::InvalidArgumentError(absl::StrCat("step: must be in [0, ", kMaxStep, "], got ", key.step));
  }
  if (key.layer < 0 || key.layer >= config_.max_layers) {
    return absl::InvalidArgumentError(absl::StrCat("layer: must be in [0, ", config_.max_layers, "), got ", key.layer));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<PlanRounds::Round>> PlanRounds::FindOrCreate(RoundKey key) {
  if (auto it = rounds_.find(key); it != rounds_.end()) return it->second;
  if (absl::Status s = CheckNewStep(key.step); !s.ok()) return s;
  absl::StatusOr<std::vector<std::shared_ptr<Round>>> created = CreateRounds(key.step, {&key.layer, 1});
  if (!created.ok()) return created.status();
  return std::move(created->front());
}

absl::Status PlanRounds::CheckNewStep(int64_t step) const {
  if (step < newest_step_ - config_.keep_steps) {
    return absl::FailedPreconditionError(
        absl::StrCat("step ", step, " is stale: rounds before step ", newest_step_ - config_.keep_steps, " are gone"));
  }
  if (newest_step_ >= 0 && step - newest_step_ > config_.max_step_ahead) {
    return absl::OutOfRangeError(absl::StrCat("step: ", step, " is more than ", config_.max_step_ahead,
                                              " steps ahead of the newest step (", newest_step_,
                                              "); a trainer that starts over registers a new run"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::shared_ptr<PlanRounds::Round>>> PlanRounds::CreateRounds(
    int64_t step, std::span<const int32_t> layers) {
  if (step > newest_step_) {
    newest_step_ = step;
    Forget(rounds_.begin(), rounds_.lower_bound(RoundKey{newest_step_ - config_.keep_steps, 0}));
  }
  if (absl::Status s = MakeRoom(static_cast<int64_t>(layers.size())); !s.ok()) return s;
  const int R = config_.problem->ranks();
  std::vector<std::shared_ptr<Round>> created;
  for (const int32_t layer : layers) {
    auto round = std::make_shared<Round>();
    round->request = EmptyRequest(config_.problem);
    round->reported.assign(static_cast<size_t>(R), 0);
    round->missing = R;
    round->deadline = absl::Now() + config_.round_timeout;
    rounds_[RoundKey{step, layer}] = round;
    round_bytes_ += RoundBytes(config_);
    created.push_back(std::move(round));
  }
  return created;
}

void PlanRounds::Forget(std::map<RoundKey, std::shared_ptr<Round>>::iterator first,
                        std::map<RoundKey, std::shared_ptr<Round>>::iterator last) {
  round_bytes_ -= static_cast<int64_t>(std::distance(first, last)) * RoundBytes(config_);
  rounds_.erase(first, last);
}

absl::Status PlanRounds::MakeRoom(int64_t count) {
  const int64_t need = count * RoundBytes(config_);
  for (auto it = rounds_.begin(); it != rounds_.end() && round_bytes_ + need > config_.max_round_bytes;) {
    const auto next = std::next(it);
    if (it->second->state == State::kDone) Forget(it, next);
    it = next;
  }
  if (round_bytes_ + need <= config_.max_round_bytes) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      "the daemon holds ", rounds_.size(), " unsettled rounds (", round_bytes_ >> 20, " MiB of loads; its limit is ",
      config_.max_round_bytes >> 20, " MiB): no room for ", count == 1 ? "another" : absl::StrCat(count, " more")));
}

std::shared_ptr<const RoundPlan> PlanRounds::Fallback(RoundKey key, const PlanRequest& request,
                                                      std::string reason) const {
  auto result = std::make_shared<RoundPlan>();
  result->key = key;
  result->score = Score(request, result->plan, 0);
  result->identity = {0, PlanHash(result->plan), Provenance::kNoReplication, std::move(reason)};
  result->planner = "none";
  return result;
}

void PlanRounds::Publish(Round& round, std::shared_ptr<const RoundPlan> result) {
  if (config_.on_plan) config_.on_plan(*result);
  round.result = result;
  round.state = State::kDone;
  for (SettledCallback& done : round.waiters) settled_.emplace_back(std::move(done), result);
  round.waiters.clear();
  recent_.insert(recent_.begin(), std::move(result));
  if (recent_.size() > kRecentPlans) recent_.pop_back();
}

std::vector<absl::StatusOr<ScoredPlan>> PlanRounds::PlanUnlocked(const PlannerSlot& slot,
                                                                 std::span<const PlanRequest* const> requests,
                                                                 absl::Time deadline) {
  mu_.Unlock();
  std::vector<absl::StatusOr<ScoredPlan>> scored = slot.PlanBatch(requests, deadline);
  mu_.Lock();
  return scored;
}

void PlanRounds::PlanTogether(std::span<const KeyedRound> rounds) {
  std::shared_ptr<const PlannerSlot> slot = planners_.current();
  const absl::Time deadline = absl::Now() + config_.round_timeout;
  std::vector<const PlanRequest*> requests;
  for (const auto& [key, round] : rounds) {
    round->state = State::kPlanning;
    round->planning_slot = slot;
    round->planning_deadline = deadline;
    requests.push_back(&round->request);
  }
  // The rounds' waiters see kPlanning and keep waiting (the caller holds the rounds alive); the
  // timer answers them at the planning deadline if the planner has not.
  if (deadline < timer_wakes_) timer_cv_.Signal();
  std::vector<absl::StatusOr<ScoredPlan>> scored = PlanUnlocked(*slot, requests, deadline);
  std::vector<RoundKey> planned_keys;
  std::vector<const PlanRequest*> planned;
  for (size_t i = 0; i < rounds.size(); ++i) {
    const auto& [key, round] = rounds[i];
    if (round->state == State::kDone) continue;  // too late: the timer gave the round its fallback
    if (!scored[i].ok()) {
      std::string reason = absl::StrCat("planner ", slot->name(), " failed: ", scored[i].status().message());
      // A planner that fails (a plugin's invalid plan) is dropped for the one before it, if any;
      // one merely busy past the deadline is not.
      if (scored[i].status().code() != absl::StatusCode::kDeadlineExceeded) planners_.Drop(slot, reason);
      Publish(*round, Fallback(key, round->request, std::move(reason)));
      continue;
    }
    auto result = std::make_shared<RoundPlan>();
    result->key = key;
    result->plan = std::move(scored[i]->plan);
    result->score = scored[i]->score;
    result->identity = {slot->version(), scored[i]->hash, Provenance::kDaemonRound, ""};
    result->planner = slot->name();
    Publish(*round, std::move(result));
    planned_keys.push_back(key);
    planned.push_back(&round->request);
  }
  if (!planned.empty() && prefetches_.on()) Place(planned_keys, planned, *slot);
}

void PlanRounds::Place(std::span<const RoundKey> keys, std::span<const PlanRequest* const> planned,
                       const PlannerSlot& slot) {
  // The rounds are settled: nothing changes their requests while the lock is released.
  mu_.Unlock();
  prefetches_.Place(keys, planned, slot, absl::Now() + config_.round_timeout);
  mu_.Lock();
}

absl::StatusOr<std::shared_ptr<const RoundPlan>> PlanRounds::Await(RoundKey key, Round& round, absl::Time wait_until) {
  auto settled = [&round]() { return round.state == State::kDone; };
  auto collecting = [&round]() { return round.state != State::kCollecting; };
  // Until the round's deadline: any change (planning started, or done).
  if (round.state == State::kCollecting) {
    mu_.AwaitWithDeadline(absl::Condition(&collecting), std::min(round.deadline, wait_until));
    if (round.state == State::kCollecting) {
      if (absl::Now() < round.deadline) {
        return absl::DeadlineExceededError(absl::StrCat("no plan for ", KeyText(key), " before the call's deadline; ",
                                                        round.missing, " ranks had not reported"));
      }
      Publish(round, Fallback(key, round.request,
                              absl::StrCat(round.missing, " of ", config_.problem->ranks(),
                                           " ranks had not reported at the round's deadline")));
    }
  }
  mu_.AwaitWithDeadline(absl::Condition(&settled), wait_until);
  if (round.state != State::kDone) {
    return absl::DeadlineExceededError(
        absl::StrCat("the plan for ", KeyText(key), " was not ready by the call's deadline"));
  }
  return round.result;
}

absl::StatusOr<PlanRounds::Ticket> PlanRounds::SubmitRow(RoundKey key, int rank, std::span<const int64_t> row) {
  const LayerRow one[] = {{key.layer, row}};
  absl::StatusOr<std::vector<Ticket>> tickets = Submit(key.step, rank, one, /*name_rows=*/false);
  if (!tickets.ok()) return tickets.status();
  return std::move(tickets->front());
}

absl::StatusOr<std::vector<PlanRounds::Ticket>> PlanRounds::SubmitRows(int64_t step, int rank,
                                                                       std::span<const LayerRow> rows) {
  return Submit(step, rank, rows, /*name_rows=*/true);
}

bool PlanRounds::CountRow(Round& round, int rank, std::span<const int64_t> row, int64_t row_total) {
  round.total += row_total;
  std::copy(row.begin(), row.end(), round.request.load.row(rank).begin());
  round.reported[rank] = 1;
  return --round.missing == 0;
}

absl::StatusOr<std::vector<PlanRounds::Ticket>> PlanRounds::Submit(int64_t step, int rank,
                                                                   std::span<const LayerRow> rows, bool name_rows) {
  const int R = config_.problem->ranks();
  auto named = [name_rows](size_t i, const absl::Status& s) {
    return name_rows ? absl::Status(s.code(), absl::StrCat("layers[", i, "]: ", s.message())) : s;
  };
  std::vector<int64_t> totals;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (absl::Status s = CheckKey({step, rows[i].layer}); !s.ok()) return named(i, s);
    if (rank < 0 || rank >= R) {
      return absl::InvalidArgumentError(absl::StrCat("rank: must be in [0, ", R, "), got ", rank));
    }
    if (absl::Status s = CheckRow(rows[i].row, config_.problem->experts); !s.ok()) return named(i, s);
    for (size_t j = 0; j < i; ++j) {
      if (rows[j].layer == rows[i].layer) {
        return named(i, absl::InvalidArgumentError(
                            absl::StrCat("layer ", rows[i].layer, " appears twice (first at layers[", j, "])")));
      }
    }
    totals.push_back(RowTotal(rows[i].row));
  }
  std::vector<Ticket> tickets;
  {
    absl::MutexLock lock(&mu_);
    // Every check first, so that a refused call counts no row.
    std::vector<std::shared_ptr<Round>> found(rows.size());
    std::vector<int32_t> new_layers;
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto it = rounds_.find({step, rows[i].layer});
      if (it == rounds_.end()) {
        if (absl::Status s = CheckNewStep(step); !s.ok()) return named(i, s);
        new_layers.push_back(rows[i].layer);
        continue;
      }
      found[i] = it->second;
      const Round& round = *found[i];
      if (round.reported[rank]) {
        if (!SameRow(round.request.load, rank, rows[i].row)) {
          return named(
              i, absl::FailedPreconditionError(absl::StrCat("rank ", rank, " already reported a different load for ",
                                                            KeyText({step, rows[i].layer}))));
        }
      } else if (round.state == State::kCollecting) {
        if (absl::Status s = CheckTotal(round.total, totals[i]); !s.ok()) return named(i, s);
      }
    }
    if (!new_layers.empty()) {
      absl::StatusOr<std::vector<std::shared_ptr<Round>>> created = CreateRounds(step, new_layers);
      if (!created.ok()) return created.status();
      for (size_t i = 0, next = 0; i < rows.size(); ++i) {
        if (found[i] == nullptr) found[i] = (*created)[next++];
      }
    }
    std::vector<KeyedRound> complete;
    for (size_t i = 0; i < rows.size(); ++i) {
      Round& round = *found[i];
      const RoundKey key{step, rows[i].layer};
      if (!round.reported[rank] && round.state == State::kCollecting && CountRow(round, rank, rows[i].row, totals[i])) {
        complete.emplace_back(key, found[i]);
      }
      tickets.push_back(Ticket(key, found[i]));
    }
    if (!complete.empty()) PlanTogether(complete);
  }
  RunSettled();  // the rows may have completed rounds
  return tickets;
}

absl::StatusOr<std::shared_ptr<const RoundPlan>> PlanRounds::Await(const Ticket& ticket, absl::Time wait_until) {
  absl::StatusOr<std::shared_ptr<const RoundPlan>> plan;
  {
    absl::MutexLock lock(&mu_);
    plan = Await(ticket.key_, *ticket.round_, wait_until);
  }
  RunSettled();  // this wait may have published the fallback
  return plan;
}

absl::StatusOr<std::shared_ptr<const RoundPlan>> PlanRounds::ReportRow(RoundKey key, int rank,
                                                                       std::span<const int64_t> row,
                                                                       absl::Time wait_until) {
  absl::StatusOr<Ticket> ticket = SubmitRow(key, rank, row);
  if (!ticket.ok()) return ticket.status();
  return Await(*ticket, wait_until);
}

absl::StatusOr<std::shared_ptr<const RoundPlan>> PlanRounds::ReportMatrix(RoundKey key, LoadMatrix load) {
  if (absl::Status s = CheckKey(key); !s.ok()) return s;
  const int R = config_.problem->ranks();
  if (load.sources() != R || load.experts() != config_.problem->experts) {
    return absl::InvalidArgumentError(absl::StrCat("load: must be ", R, " x ", config_.problem->experts, ", got ",
                                                   load.sources(), " x ", load.experts()));
  }
  int64_t total = 0;
  for (int s = 0; s < R; ++s) {
    if (absl::Status st = CheckRow(load.row(s), config_.problem->experts); !st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("load[", s, "]", st.message().substr(4)));
    }
    const int64_t added = RowTotal(load.row(s));
    if (absl::Status st = CheckTotal(total, added); !st.ok()) return st;
    total += added;
  }
  absl::StatusOr<std::shared_ptr<const RoundPlan>> plan = ReportCheckedMatrix(key, std::move(load));
  RunSettled();  // ranks that reported rows of this round may be waiting
  return plan;
}

absl::StatusOr<std::shared_ptr<const RoundPlan>> PlanRounds::ReportCheckedMatrix(RoundKey key, LoadMatrix load) {
  const int R = config_.problem->ranks();
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::shared_ptr<Round>> found = FindOrCreate(key);
  if (!found.ok()) return found.status();
  const std::shared_ptr<Round> keep = *std::move(found);
  Round& round = *keep;
  for (int s = 0; s < R; ++s) {
    if (round.reported[s] && !SameRow(round.request.load, s, load.row(s))) {
      return absl::FailedPreconditionError(
          absl::StrCat("load[", s, "]: differs from the row rank ", s, " reported for ", KeyText(key)));
    }
  }
  if (round.state == State::kCollecting) {
    round.request.load = std::move(load);
    round.total = RowTotal(round.request.load.data());
    std::fill(round.reported.begin(), round.reported.end(), 1);
    round.missing = 0;
    const KeyedRound complete[] = {{key, keep}};
    PlanTogether(complete);
  }
  return Await(key, round, absl::InfiniteFuture());
}

int PlanRounds::RowsIn(RoundKey key) const {
  absl::MutexLock lock(&mu_);
  const auto it = rounds_.find(key);
  return it == rounds_.end() ? 0 : config_.problem->ranks() - it->second->missing;
}

std::vector<std::shared_ptr<const RoundPlan>> PlanRounds::RecentPlans(size_t n) const {
  absl::MutexLock lock(&mu_);
  return {recent_.begin(), recent_.begin() + static_cast<std::ptrdiff_t>(std::min(n, recent_.size()))};
}

}  // namespace taot::server

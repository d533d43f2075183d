#include "taot/server/plan_rounds.h"

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "rounds_testing.h"
#include "taot/planner/plan_hash.h"
#include "taot/planner/run_planner.h"
#include "taot/sim/case_generator.h"

namespace taot::server {
namespace {

// An EP16 layer at 70% initial imbalance.
PlanRequest Case(uint64_t seed = 1) {
  sim::CaseOptions o;
  o.imbalance = 0.7;
  o.seed = seed;
  return sim::GenerateCase(o)->request;
}

std::unique_ptr<PlanRounds> Rounds(const PlanRequest& request, absl::Duration timeout = absl::Seconds(10)) {
  absl::StatusOr<std::unique_ptr<PlanRounds>> rounds = PlanRounds::Create(ConfigFor(request, timeout), "taot");
  EXPECT_TRUE(rounds.ok()) << rounds.status();
  return *std::move(rounds);
}

// Every rank of `ranks` reports its row of `load` on its own thread.
std::vector<absl::StatusOr<std::shared_ptr<const RoundPlan>>> ReportAll(PlanRounds& rounds, RoundKey key,
                                                                        const LoadMatrix& load,
                                                                        const std::vector<int>& ranks,
                                                                        absl::Duration wait = absl::Seconds(10)) {
  std::vector<absl::StatusOr<std::shared_ptr<const RoundPlan>>> out(ranks.size(), absl::UnknownError("unset"));
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ranks.size(); ++i) {
    threads.emplace_back([&, i] { out[i] = rounds.ReportRow(key, ranks[i], load.row(ranks[i]), absl::Now() + wait); });
  }
  for (std::thread& t : threads) t.join();
  return out;
}

std::vector<int> AllRanks(int n) {
  std::vector<int> ranks(static_cast<size_t>(n));
  for (int r = 0; r < n; ++r) ranks[r] = r;
  return ranks;
}

TEST(PlanRoundsTest, EveryRankGetsTheSamePlanOnceAllRowsArrive) {
  const PlanRequest request = Case();
  std::unique_ptr<PlanRounds> rounds = Rounds(request);
  const auto results = ReportAll(*rounds, {3, 5}, request.load, AllRanks(16));
  ASSERT_TRUE(results[0].ok()) << results[0].status();
  const std::shared_ptr<const RoundPlan>& first = *results[0];
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->get(), first.get());  // planned once, shared
  }
  EXPECT_FALSE(first->identity.fallback());
  EXPECT_EQ(first->planner, "taot");
  EXPECT_EQ(first->identity.version, 1u);
  EXPECT_EQ(first->identity.hash, PlanHash(first->plan));
  // The same plan taot makes on the matrix directly.
  auto planner = PlannerRegistry::BuiltIn().Create("taot");
  absl::StatusOr<ScoredPlan> direct = RunPlanner(**planner, request);
  ASSERT_TRUE(direct.ok());
  EXPECT_EQ(first->plan, direct->plan);
  EXPECT_FALSE(first->plan.replicas.empty());
}

TEST(PlanRoundsTest, MissingRowsGiveEveryoneTheSameFlaggedFallbackAtTheDeadline) {
  const PlanRequest request = Case();
  std::unique_ptr<PlanRounds> rounds = Rounds(request, absl::Milliseconds(100));
  std::vector<int> ranks = AllRanks(16);
  ranks.pop_back();  // rank 15 never reports in time
  const auto results = ReportAll(*rounds, {0, 0}, request.load, ranks);
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->get(), results[0]->get());
  }
  const RoundPlan& fallback = **results[0];
  EXPECT_TRUE(fallback.identity.fallback());
  EXPECT_TRUE(fallback.plan.replicas.empty());
  EXPECT_NE(fallback.identity.reason.find("1 of 16 ranks had not reported"), std::string::npos)
      << fallback.identity.reason;
  // The late rank gets the same fallback, not a new plan.
  auto late = rounds->ReportRow({0, 0}, 15, request.load.row(15), absl::Now() + absl::Seconds(1));
  ASSERT_TRUE(late.ok());
  EXPECT_EQ(late->get(), results[0]->get());
}

TEST(PlanRoundsTest, CallbacksGetThePlanFromTheRowThatCompletesTheRound) {
  const PlanRequest request = Case();
  std::unique_ptr<PlanRounds> rounds = Rounds(request);
  Answers answers;
  for (int r = 0; r < 15; ++r) {
    absl::StatusOr<PlanRounds::Ticket> ticket = rounds->SubmitRow({1, 0}, r, request.load.row(r));
    ASSERT_TRUE(ticket.ok()) << ticket.status();
    rounds->WhenSettled(*ticket, answers.Callback());
  }
  EXPECT_EQ(answers.count(), 0u);  // nobody is answered before the last row
  absl::StatusOr<PlanRounds::Ticket> last = rounds->SubmitRow({1, 0}, 15, request.load.row(15));
  ASSERT_TRUE(last.ok()) << last.status();
  // The last row's call answered everyone before it returned.
  const std::vector<std::shared_ptr<const RoundPlan>> plans = answers.Await(15, absl::ZeroDuration());
  ASSERT_EQ(plans.size(), 15u);
  for (const auto& p : plans) EXPECT_EQ(p.get(), plans[0].get());
  EXPECT_FALSE(plans[0]->identity.fallback());
  // A callback on a settled round is answered at once, with the same plan.
  rounds->WhenSettled(*last, answers.Callback());
  const std::vector<std::shared_ptr<const RoundPlan>> all = answers.Await(16, absl::ZeroDuration());
  ASSERT_EQ(all.size(), 16u);
  EXPECT_EQ(all.back().get(), plans[0].get());
}

TEST(PlanRoundsTest, TheTimerAnswersCallbacksOfARoundLeftShortAtItsDeadline) {
  const PlanRequest request = Case();
  std::unique_ptr<PlanRounds> rounds = Rounds(request, absl::Milliseconds(100));
  Answers answers;
  for (int r = 0; r < 14; ++r) {
    absl::StatusOr<PlanRounds::Ticket> ticket = rounds->SubmitRow({2, 1}, r, request.load.row(r));
    ASSERT_TRUE(ticket.ok()) << ticket.status();
    rounds->WhenSettled(*ticket, answers.Callback());
  }
  const std::vector<std::shared_ptr<const RoundPlan>> plans = answers.Await(14, absl::Seconds(10));
  ASSERT_EQ(plans.size(), 14u);
  for (const auto& p : plans) EXPECT_EQ(p.get(), plans[0].get());
  EXPECT_TRUE(plans[0]->identity.fallback());
  EXPECT_NE(plans[0]->identity.reason.find("2 of 16 ranks had not reported"), std::string::npos)
      << plans[0]->identity.reason;
  // A rank arriving late waits for nothing and gets the same fallback.
  auto late = rounds->ReportRow({2, 1}, 15, request.load.row(15), absl::Now() + absl::Seconds(1));
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_EQ(late->get(), plans[0].get());
}

TEST(PlanRoundsTest, StoppingAnswersEveryCallbackStillWaiting) {
  const PlanRequest request = Case();
  std::unique_ptr<PlanRounds> rounds = Rounds(request, absl::Hours(1));
  Answers answers;
  absl::StatusOr<PlanRounds::Ticket> ticket = rounds->SubmitRow({0, 0}, 3, request.load.row(3));
  ASSERT_TRUE(ticket.ok()) << ticket.status();
  rounds->WhenSettled(*ticket, answers.Callback());
  rounds.reset();
  const std::vector<std::shared_ptr<const RoundPlan>> plans = answers.Await(1, absl::ZeroDuration());
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_TRUE(plans[0]->identity.fallback());
  EXPECT_EQ(plans[0]->identity.reason, "the daemon is stopping");
}

TEST(PlanRoundsTest, BadInputIsRefusedByNameAndChangesNothing) {
  const PlanRequest request = Case();
  std::unique_ptr<PlanRounds> rounds = Rounds(request);
  const absl::Time soon = absl::Now() + absl::Seconds(1);
  std::vector<int64_t> row(request.load.row(0).begin(), request.load.row(0).end());
  auto expect = [](const absl::StatusOr<std::shared_ptr<const RoundPlan>>& r, absl::StatusCode code,
                   const std::string& needle) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), code) << r.status();
    EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status();
  };
  expect(rounds->ReportRow({0, 0}, 16, row, soon), absl::StatusCode::kInvalidArgument, "rank: must be in [0, 16)");
  expect(rounds->ReportRow({0, 0}, -1, row, soon), absl::StatusCode::kInvalidArgument, "rank");
  expect(rounds->ReportRow({-1, 0}, 0, row, soon), absl::StatusCode::kInvalidArgument, "step");
  expect(rounds->ReportRow({0, 5000}, 0, row, soon), absl::StatusCode::kInvalidArgument, "layer");
  expect(rounds->ReportRow({0, 0}, 0, std::span<const int64_t>(row).first(3), soon), absl::StatusCode::kInvalidArgument,
         "load: must have 128 entries");
  std::vector<int64_t> negative = row;
  negative[17] = -5;
  expect(rounds->ReportRow({0, 0}, 0, negative, soon), absl::StatusCode::kInvalidArgument, "load[17]");
  expect(rounds->ReportMatrix({0, 0}, LoadMatrix(3, 128)), absl::StatusCode::kInvalidArgument,
         "load: must be 16 x 128");
  // Nothing was counted: the round completes with the 16 good rows and plans normally.
  const auto results = ReportAll(*rounds, {0, 0}, request.load, AllRanks(16));
  ASSERT_TRUE(results[0].ok()) << results[0].status();
  EXPECT_FALSE((*results[0])->identity.fallback());
}

TEST(PlanRoundsTest, ARetryIsFineButADifferentRowIsRefused) {
  const PlanRequest request = Case();
  std::unique_ptr<PlanRounds> rounds = Rounds(request, absl::Seconds(5));
  std::vector<int64_t> row(request.load.row(4).begin(), request.load.row(4).end());
  const absl::Time short_wait = absl::Now() + absl::Milliseconds(20);
  // The first call times out on its own deadline; its row still counts.
  auto first = rounds->ReportRow({1, 2}, 4, row, short_wait);
  ASSERT_FALSE(first.ok());
  EXPECT_EQ(first.status().code(), absl::StatusCode::kDeadlineExceeded) << first.status();
  row[0] += 1;
  auto changed = rounds->ReportRow({1, 2}, 4, row, absl::Now() + absl::Seconds(1));
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(changed.status().message().find("rank 4 already reported a different load"), std::string::npos);
  // Everyone, rank 4 retrying its original row included, gets the real plan.
  const auto results = ReportAll(*rounds, {1, 2}, request.load, AllRanks(16));
  for (const auto& r : results) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_FALSE((*r)->identity.fallback());
  }
}

TEST(PlanRoundsTest, StaleStepsAreRefused) {
  const PlanRequest request = Case();
  std::unique_ptr<PlanRounds> rounds = Rounds(request);  // keeps 2 steps back
  ASSERT_TRUE(rounds->ReportMatrix({10, 0}, request.load).ok());
  auto stale = rounds->ReportRow({7, 0}, 0, request.load.row(0), absl::Now() + absl::Seconds(1));
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(stale.status().message().find("step 7 is stale"), std::string::npos) << stale.status();
  EXPECT_TRUE(rounds->ReportMatrix({8, 0}, request.load).ok());
}

TEST(PlanRoundsTest, AWholeMatrixPlansAtOnceAndMustAgreeWithRowsAlreadyIn) {
  const PlanRequest request = Case();
  std::unique_ptr<PlanRounds> rounds = Rounds(request, absl::Seconds(5));
  auto matrix = rounds->ReportMatrix({2, 0}, request.load);
  ASSERT_TRUE(matrix.ok()) << matrix.status();
  // A rank reporting its row afterwards gets that plan.
  auto row = rounds->ReportRow({2, 0}, 3, request.load.row(3), absl::Now() + absl::Seconds(1));
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->get(), matrix->get());
  // A matrix that contradicts a row already reported is refused.
  (void)rounds->ReportRow({2, 1}, 0, request.load.row(0), absl::Now() + absl::Milliseconds(1));
  const PlanRequest other = Case(2);
  auto clash = rounds->ReportMatrix({2, 1}, other.load);
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.status().message().find("load[0]: differs"), std::string::npos) << clash.status();
}

TEST(PlanRoundsTest, SwappingThePlannerTakesEffectForTheNextRoundAndAFailedSwapKeepsTheOld) {
  const PlanRequest request = Case();
  std::unique_ptr<PlanRounds> rounds = Rounds(request);
  EXPECT_FALSE(rounds->SetPlanner("magic", {}).ok());
  EXPECT_FALSE(rounds->SetPlanner("taot", {{"colour", "blue"}}).ok());
  auto first = rounds->ReportMatrix({0, 0}, request.load);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ((*first)->planner, "taot");
  EXPECT_EQ((*first)->identity.version, 1u);
  ASSERT_TRUE(rounds->SetPlanner("echo", {}).ok());
  auto second = rounds->ReportMatrix({0, 1}, request.load);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ((*second)->planner, "echo");
  EXPECT_EQ((*second)->identity.version, 2u);
  EXPECT_NE((*second)->identity.hash, (*first)->identity.hash);
  const auto recent = rounds->RecentPlans(10);
  ASSERT_EQ(recent.size(), 2u);
  EXPECT_EQ(recent[0]->planner, "echo");
}

TEST(PlanRoundsTest, PlannedRoundsFeedTheNextStepsPrefetchesOnceTheFeedIsOn) {
  const PlanRequest request = Case();
  std::unique_ptr<PlanRounds> rounds = Rounds(request);
  ASSERT_TRUE(rounds->ReportMatrix({5, 2}, request.load).ok());  // the feed is off: nothing placed
  std::vector<std::shared_ptr<const Prefetch>> got;
  rounds->prefetches().WhenPublished(0, [&](PrefetchFeed::Prefetches batch) { got = std::move(batch); });
  EXPECT_TRUE(got.empty());
  absl::StatusOr<std::shared_ptr<const RoundPlan>> plan = rounds->ReportMatrix({6, 2}, request.load);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(got.size(), 1u);  // by the call that planned the round, before it returned
  EXPECT_EQ(got[0]->key, (RoundKey{7, 2}));
  EXPECT_EQ(got[0]->identity.version, (*plan)->identity.version);
  EXPECT_EQ(got[0]->sequence, 1u);
}

}  // namespace
}  // namespace taot::server

// PlanRounds under bad input and faults (issue 11): rows that poison later rounds, planners that
// fail or hang, and more rounds than memory allows. Each is refused or survived, and the refusal
// changes nothing.
#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/synchronization/notification.h"
#include "rounds_testing.h"
#include "taot/server/plan_rounds.h"
#include "taot/sim/case_generator.h"

namespace taot::server {
namespace {

PlanRequest Case(int ranks = 16, int experts = 128) {
  sim::CaseOptions o;
  o.ranks = ranks;
  o.experts = experts;
  o.imbalance = 0.7;
  return sim::GenerateCase(o)->request;
}

// A planner that waits for `release` (a plugin that hangs; it notifies `entered`, if given, the
// first time), or returns a plan that moves a replica nowhere (a plugin that plans wrongly).
class FaultyPlanner final : public Planner {
 public:
  FaultyPlanner(absl::Notification* release, absl::Notification* entered) : release_(release), entered_(entered) {}
  std::string_view name() const override { return release_ != nullptr ? "hang" : "wrong"; }
  absl::StatusOr<Plan> MakePlan(const PlanRequest&) override {
    if (release_ != nullptr) {
      if (entered_ != nullptr && !entered_->HasBeenNotified()) entered_->Notify();
      release_->WaitForNotification();
      return Plan{};
    }
    Plan plan;
    plan.replicas.push_back({-1, 0});
    return plan;
  }

 private:
  absl::Notification* release_;
  absl::Notification* entered_;
};

// The built-in planners and the two faulty ones.
PlannerRegistry WithFaultyPlanners(absl::Notification* release, absl::Notification* entered = nullptr) {
  PlannerRegistry registry = PlannerRegistry::BuiltIn();
  EXPECT_TRUE(registry
                  .Register({"hang", "waits until the test releases it", {}},
                            [release, entered](const PlannerParams&) -> absl::StatusOr<std::unique_ptr<Planner>> {
                              return std::make_unique<FaultyPlanner>(release, entered);
                            })
                  .ok());
  EXPECT_TRUE(registry
                  .Register({"wrong", "plans a replica of expert -1", {}},
                            [](const PlannerParams&) -> absl::StatusOr<std::unique_ptr<Planner>> {
                              return std::make_unique<FaultyPlanner>(nullptr, nullptr);
                            })
                  .ok());
  return registry;
}

TEST(PlanRoundsFaultsTest, StepsFarAheadAreRefusedAndLaterStepsStillWork) {
  const PlanRequest request = Case();
  std::unique_ptr<PlanRounds> rounds = *PlanRounds::Create(ConfigFor(request, absl::Seconds(10)), "taot");
  ASSERT_TRUE(rounds->ReportMatrix({5, 0}, request.load).ok());
  const auto at = [](int64_t step) { return RoundKey{step, 0}; };
  for (const int64_t step : {int64_t{9223372036854775807}, int64_t{1000000000000}, int64_t{5 + 1025}}) {
    absl::StatusOr<PlanRounds::Ticket> far = rounds->SubmitRow(at(step), 0, request.load.row(0));
    ASSERT_FALSE(far.ok()) << step;
    EXPECT_TRUE(far.status().code() == absl::StatusCode::kOutOfRange ||
                far.status().code() == absl::StatusCode::kInvalidArgument)
        << far.status();
    EXPECT_NE(far.status().message().find("step"), std::string::npos) << far.status();
    EXPECT_EQ(rounds->RowsIn(at(step)), 0);
  }
  // Nothing moved: the next steps are not stale.
  EXPECT_TRUE(rounds->ReportMatrix({6, 0}, request.load).ok());
  EXPECT_TRUE(rounds->ReportMatrix({5 + 1024, 0}, request.load).ok());
}

TEST(PlanRoundsFaultsTest, RowsOverThePlannersTotalAreRefusedAndThePlannerStays) {
  // 64 ranks x 256 experts at 2^40 tokens each: every row is valid, 16 of them pass 2^52.
  const PlanRequest request = Case(64, 256);
  std::unique_ptr<PlanRounds> rounds = *PlanRounds::Create(ConfigFor(request, absl::Seconds(10)), "taot");
  ASSERT_TRUE(rounds->SetPlanner("echo", {}).ok());  // a previous planner it could wrongly fall back to
  const std::vector<int64_t> row(256, kMaxTokensPerEntry);
  int accepted = 0;
  absl::Status refused;
  for (int r = 0; r < 64 && refused.ok(); ++r) {
    absl::StatusOr<PlanRounds::Ticket> ticket = rounds->SubmitRow({0, 0}, r, row);
    if (ticket.ok()) ++accepted;
    refused = ticket.status();
  }
  EXPECT_EQ(accepted, 16);
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("more than 4503599627370496 tokens"), std::string::npos) << refused;
  EXPECT_EQ(rounds->RowsIn({0, 0}), 16);
  // The same for a whole matrix.
  LoadMatrix heavy(64, 256);
  for (int r = 0; r < 64; ++r) std::fill(heavy.row(r).begin(), heavy.row(r).end(), kMaxTokensPerEntry);
  EXPECT_EQ(rounds->ReportMatrix({0, 1}, heavy).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(rounds->planner().name, "echo");
  EXPECT_EQ(rounds->planner().version, 2u);
}

TEST(PlanRoundsFaultsTest, AFailingPlannerIsDroppedAndVersionsOnlyCountUp) {
  PlannerRegistry registry = WithFaultyPlanners(nullptr);
  const PlanRequest request = Case();
  RoundsConfig config = ConfigFor(request, absl::Seconds(10));
  config.registry = &registry;
  std::unique_ptr<PlanRounds> rounds = *PlanRounds::Create(config, "taot");
  ASSERT_TRUE(rounds->SetPlanner("wrong", {}).ok());
  absl::StatusOr<std::shared_ptr<const RoundPlan>> failed = rounds->ReportMatrix({0, 0}, request.load);
  ASSERT_TRUE(failed.ok()) << failed.status();
  EXPECT_TRUE((*failed)->identity.fallback());
  EXPECT_NE((*failed)->identity.reason.find("planner wrong failed"), std::string::npos) << (*failed)->identity.reason;
  EXPECT_NE((*failed)->identity.reason.find("back to planner taot"), std::string::npos) << (*failed)->identity.reason;
  EXPECT_EQ(rounds->planner().name, "taot");
  EXPECT_EQ(rounds->planner().version, 3u);  // taot was 1, wrong 2: back to taot is 3, not 1
  absl::StatusOr<std::shared_ptr<const RoundPlan>> next = rounds->ReportMatrix({0, 1}, request.load);
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE((*next)->identity.fallback());
  EXPECT_EQ((*next)->identity.version, 3u);
}

TEST(PlanRoundsFaultsTest, AHungPlannerCannotHoldItsRoundPastTheDeadline) {
  absl::Notification release;
  PlannerRegistry registry = WithFaultyPlanners(&release);
  const PlanRequest request = Case();
  RoundsConfig config = ConfigFor(request, absl::Milliseconds(200));
  config.registry = &registry;
  std::unique_ptr<PlanRounds> rounds = *PlanRounds::Create(config, "taot");
  ASSERT_TRUE(rounds->SetPlanner("hang", {}).ok());
  Answers answers;
  for (int r = 0; r < 15; ++r) {
    absl::StatusOr<PlanRounds::Ticket> ticket = rounds->SubmitRow({0, 0}, r, request.load.row(r));
    ASSERT_TRUE(ticket.ok()) << ticket.status();
    rounds->WhenSettled(*ticket, answers.Callback());
  }
  // The last row's call plans, and stays inside the planner (until released, even when a check
  // below fails).
  std::thread last([&] { (void)rounds->SubmitRow({0, 0}, 15, request.load.row(15)); });
  absl::Cleanup let_go = [&] {
    if (!release.HasBeenNotified()) release.Notify();
    if (last.joinable()) last.join();
  };
  const std::vector<std::shared_ptr<const RoundPlan>> plans = answers.Await(15, absl::Seconds(30));
  ASSERT_EQ(plans.size(), 15u);
  EXPECT_TRUE(plans[0]->identity.fallback());
  EXPECT_NE(plans[0]->identity.reason.find("planner hang had not finished within the round timeout"), std::string::npos)
      << plans[0]->identity.reason;
  // The hung planner is dropped: the next round plans with taot while it still hangs.
  EXPECT_EQ(rounds->planner().name, "taot");
  EXPECT_EQ(rounds->planner().version, 3u);
  absl::StatusOr<std::shared_ptr<const RoundPlan>> next = rounds->ReportMatrix({0, 1}, request.load);
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_FALSE((*next)->identity.fallback());
  // Its late plan, when it comes, changes nothing.
  std::move(let_go).Invoke();
  const std::vector<std::shared_ptr<const RoundPlan>> recent = rounds->RecentPlans(10);
  ASSERT_EQ(recent.size(), 2u);
  EXPECT_EQ(recent[1].get(), plans[0].get());
}

// With no planner to fall back to, a hung one stays in use: later rounds get their fallback at
// their deadline, and the calls that plan them return then too instead of queueing behind it.
TEST(PlanRoundsFaultsTest, RoundsBehindAHungPlannerWithNoFallbackEndAtTheirDeadline) {
  absl::Notification release, entered;
  PlannerRegistry registry = WithFaultyPlanners(&release, &entered);
  const PlanRequest request = Case();
  RoundsConfig config = ConfigFor(request, absl::Milliseconds(100));
  config.registry = &registry;
  std::unique_ptr<PlanRounds> rounds = *PlanRounds::Create(config, "hang");
  std::thread first([&] { (void)rounds->ReportMatrix({0, 0}, request.load); });
  absl::Cleanup let_go = [&] {
    if (!release.HasBeenNotified()) release.Notify();
    first.join();
  };
  // Only once the first round is inside the planner does the second come, so that it is the one
  // behind the hung planner.
  ASSERT_TRUE(entered.WaitForNotificationWithTimeout(absl::Seconds(30)));
  absl::Notification second_returned;
  absl::StatusOr<std::shared_ptr<const RoundPlan>> second = absl::UnknownError("unset");
  std::thread later([&] {
    second = rounds->ReportMatrix({0, 1}, request.load);
    second_returned.Notify();
  });
  const bool returned = second_returned.WaitForNotificationWithTimeout(absl::Seconds(30));
  std::move(let_go).Invoke();
  later.join();
  EXPECT_TRUE(returned) << "the second round's call waited for the hung planner";
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE((*second)->identity.fallback());
  EXPECT_EQ(rounds->planner().name, "hang");
}

TEST(PlanRoundsFaultsTest, TheRoundsKeptStayWithinTheirMemoryLimit) {
  const PlanRequest request = Case();
  RoundsConfig config = ConfigFor(request, absl::Seconds(10));
  const int64_t round_bytes = int64_t{16} * 128 * 8;
  config.max_round_bytes = 4 * round_bytes;
  std::unique_ptr<PlanRounds> rounds = *PlanRounds::Create(config, "taot");
  for (int layer = 0; layer < 4; ++layer) ASSERT_TRUE(rounds->SubmitRow({0, layer}, 0, request.load.row(0)).ok());
  absl::StatusOr<PlanRounds::Ticket> full = rounds->SubmitRow({0, 4}, 0, request.load.row(0));
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(full.status().message().find("its limit is"), std::string::npos) << full.status();
  EXPECT_EQ(rounds->RowsIn({0, 4}), 0);
  // Once a round settles, its room can go to a new one.
  for (int r = 1; r < 16; ++r) ASSERT_TRUE(rounds->SubmitRow({0, 0}, r, request.load.row(r)).ok());
  EXPECT_TRUE(rounds->SubmitRow({0, 4}, 0, request.load.row(0)).ok());
  // A limit below one round is a configuration error.
  config.max_round_bytes = round_bytes - 1;
  EXPECT_NE(PlanRounds::Create(config, "taot").status().message().find("max_round_bytes"), std::string::npos);
}

}  // namespace
}  // namespace taot::server

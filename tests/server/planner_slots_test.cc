#include "taot/server/planner_slots.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/notification.h"
#include "taot/sim/case_generator.h"

namespace taot::server {
namespace {

PlanRequest Case() {
  sim::CaseOptions o;
  o.ranks = 8;
  o.experts = 32;
  o.imbalance = 0.6;
  return sim::GenerateCase(o)->request;
}

// The built-in "none", once `open` is notified; says when its first plan has begun.
class GatedPlanner final : public Planner {
 public:
  GatedPlanner(absl::Notification& entered, absl::Notification& open)
      : entered_(entered), open_(open), none_(*PlannerRegistry::BuiltIn().Create("none")) {}
  std::string_view name() const override { return "gated"; }
  absl::StatusOr<Plan> MakePlan(const PlanRequest& request) override {
    if (!entered_.HasBeenNotified()) entered_.Notify();
    open_.WaitForNotification();
    return none_->MakePlan(request);
  }

 private:
  absl::Notification& entered_;
  absl::Notification& open_;
  std::unique_ptr<Planner> none_;
};

// The slot's plan of one request.
absl::StatusOr<ScoredPlan> PlanOne(const PlannerSlot& slot, const PlanRequest& request, absl::Time deadline) {
  const PlanRequest* one[] = {&request};
  return std::move(slot.PlanBatch(one, deadline).front());
}

// A slot whose planner is a GatedPlanner.
std::shared_ptr<const PlannerSlot> GatedSlot(absl::Notification& entered, absl::Notification& open) {
  PlannerRegistry registry;
  EXPECT_TRUE(registry
                  .Register({"gated", "none, once the test lets it", {}},
                            [&](const PlannerParams&) -> absl::StatusOr<std::unique_ptr<Planner>> {
                              return std::make_unique<GatedPlanner>(entered, open);
                            })
                  .ok());
  PlannerSlots slots(registry, nullptr);
  EXPECT_TRUE(slots.Set("gated", {}).ok());
  return slots.current();
}

struct Dropped {
  std::string name;
  uint64_t version = 0;
};

class PlannerSlotsTest : public ::testing::Test {
 protected:
  PlannerSlots Slots() {
    return PlannerSlots(PlannerRegistry::BuiltIn(), [this](const std::string& name, uint64_t version) {
      dropped_.push_back({name, version});
    });
  }
  std::vector<Dropped> dropped_;
};

TEST_F(PlannerSlotsTest, SetPutsAPlannerInUseUnderTheGivenVersionOrTheNextOne) {
  PlannerSlots slots = Slots();
  EXPECT_EQ(slots.current(), nullptr);
  ASSERT_TRUE(slots.Set("echo", {}, 5).ok());
  EXPECT_EQ(slots.current()->name(), "echo");
  EXPECT_EQ(slots.current()->version(), 5u);
  ASSERT_TRUE(slots.Set("taot", {{"target_imbalance_pct", "5"}}).ok());
  const PlannerInUse in_use = slots.in_use();
  EXPECT_EQ(in_use.name, "taot");
  EXPECT_EQ(in_use.version, 6u);
  EXPECT_EQ(in_use.params, (PlannerParams{{"target_imbalance_pct", "5"}}));
}

TEST_F(PlannerSlotsTest, APlannerTheRegistryRefusesChangesNothing) {
  PlannerSlots slots = Slots();
  ASSERT_TRUE(slots.Set("echo", {}).ok());
  const absl::Status s = slots.Set("magic", {});
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  // A comparison-only planner's plans exceed K: no rank could carry them out.
  EXPECT_EQ(slots.Set("eplb", {}).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(slots.current()->name(), "echo");
  EXPECT_EQ(slots.current()->version(), 1u);
}

TEST_F(PlannerSlotsTest, AFailingPlannerIsDroppedForThePreviousUnderTheNextVersionOnce) {
  PlannerSlots slots = Slots();
  ASSERT_TRUE(slots.Set("echo", {}).ok());
  ASSERT_TRUE(slots.Set("taot", {}).ok());
  const std::shared_ptr<const PlannerSlot> failing = slots.current();
  std::string reason = "planner taot failed";
  slots.Drop(failing, reason);
  EXPECT_EQ(reason, "planner taot failed; back to planner echo");
  EXPECT_EQ(slots.current()->name(), "echo");
  EXPECT_EQ(slots.current()->version(), 3u);  // above both before it
  ASSERT_EQ(dropped_.size(), 1u);
  EXPECT_EQ(dropped_[0].name, "echo");
  EXPECT_EQ(dropped_[0].version, 3u);
  // Nothing to go back to now.
  std::string again = "planner echo failed";
  slots.Drop(slots.current(), again);
  EXPECT_EQ(again, "planner echo failed");
  EXPECT_EQ(slots.current()->version(), 3u);
  EXPECT_EQ(dropped_.size(), 1u);
}

TEST_F(PlannerSlotsTest, APlannerNoLongerInUseIsNotDropped) {
  PlannerSlots slots = Slots();
  ASSERT_TRUE(slots.Set("echo", {}).ok());
  ASSERT_TRUE(slots.Set("taot", {}).ok());
  const std::shared_ptr<const PlannerSlot> old = slots.current();
  ASSERT_TRUE(slots.Set("llep", {}).ok());
  std::string reason = "late";
  slots.Drop(old, reason);
  EXPECT_EQ(reason, "late");
  EXPECT_EQ(slots.current()->name(), "llep");
  EXPECT_TRUE(dropped_.empty());
}

TEST_F(PlannerSlotsTest, PlanRunsThePlannerAndScoresItsPlan) {
  PlannerSlots slots = Slots();
  ASSERT_TRUE(slots.Set("taot", {}).ok());
  const PlanRequest request = Case();
  absl::StatusOr<ScoredPlan> scored = PlanOne(*slots.current(), request, absl::InfiniteFuture());
  ASSERT_TRUE(scored.ok()) << scored.status();
  const ScoredPlan direct = *RunPlanner(**PlannerRegistry::BuiltIn().Create("taot"), request);
  EXPECT_EQ(scored->plan.replicas, direct.plan.replicas);
  EXPECT_EQ(scored->plan.assignments, direct.plan.assignments);
}

TEST_F(PlannerSlotsTest, RenumberedSlotsTakeTurnsWithTheirPlanner) {
  absl::Notification entered, open;
  const std::shared_ptr<const PlannerSlot> slot = GatedSlot(entered, open);
  const std::shared_ptr<const PlannerSlot> renumbered = slot->Renumbered(9);
  EXPECT_EQ(renumbered->version(), 9u);
  EXPECT_EQ(renumbered->name(), "gated");
  const PlanRequest request = Case();
  absl::StatusOr<ScoredPlan> first = absl::UnknownError("unset"), second = absl::UnknownError("unset");
  std::atomic<bool> second_done{false};
  std::thread busy([&] { first = PlanOne(*slot, request, absl::InfiniteFuture()); });
  entered.WaitForNotification();
  std::thread waiting([&] {
    second = PlanOne(*renumbered, request, absl::InfiniteFuture());
    second_done = true;
  });
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_FALSE(second_done) << "the planner's second plan began before its first ended";
  open.Notify();
  busy.join();
  waiting.join();
  EXPECT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(second.ok()) << second.status();
}

// A planner that hangs holds its turn: a caller is turned away at its deadline instead of
// queueing behind it, and the turn is free again once the planner returns.
TEST_F(PlannerSlotsTest, ACallerGivesUpOnABusyPlannerAtItsDeadline) {
  absl::Notification entered, open;
  const std::shared_ptr<const PlannerSlot> slot = GatedSlot(entered, open);
  const PlanRequest request = Case();
  absl::StatusOr<ScoredPlan> hung = absl::UnknownError("unset");
  std::thread busy([&] { hung = PlanOne(*slot, request, absl::InfiniteFuture()); });
  entered.WaitForNotification();
  const absl::StatusOr<ScoredPlan> turned_away = PlanOne(*slot, request, absl::Now() + absl::Milliseconds(20));
  EXPECT_EQ(turned_away.status().code(), absl::StatusCode::kDeadlineExceeded) << turned_away.status();
  EXPECT_NE(turned_away.status().message().find("planner gated is still busy"), std::string::npos);
  open.Notify();
  busy.join();
  EXPECT_TRUE(hung.ok()) << hung.status();
  const absl::StatusOr<ScoredPlan> next = PlanOne(*slot, request, absl::Now() + absl::Seconds(30));
  EXPECT_TRUE(next.ok()) << next.status();
}

}  // namespace
}  // namespace taot::server

#include "taot/wire/plan_wire.h"

#include <gtest/gtest.h>

#include <functional>

#include "taot/planner/plan_hash.h"

namespace taot::wire {
namespace {

Plan Sample() {
  Plan plan;
  plan.replicas = {{1, 0}, {5, 3}, {5, 7}};
  plan.assignments = {{0, 5, 3, 310}, {2, 1, 0, 1}, {6, 5, 7, int64_t{1} << 40}};
  return plan;
}

taot::v1::Plan Encoded(const Plan& plan) {
  taot::v1::Plan message;
  PlanToProto(plan, message);
  message.set_hash(PlanHash(plan));
  return message;
}

TEST(PlanWireTest, ReplicasAndAssignmentsRoundTripFieldByField) {
  const Plan plan = Sample();
  const taot::v1::Plan message = Encoded(plan);
  ASSERT_EQ(message.replicas_size(), 3);
  EXPECT_EQ(message.replicas(1).expert(), 5);
  EXPECT_EQ(message.replicas(1).rank(), 3);
  ASSERT_EQ(message.assignments_size(), 3);
  EXPECT_EQ(message.assignments(0).source(), 0);
  EXPECT_EQ(message.assignments(0).expert(), 5);
  EXPECT_EQ(message.assignments(0).rank(), 3);
  EXPECT_EQ(message.assignments(2).tokens(), int64_t{1} << 40);
  // Through the bytes too, as a receiver gets them.
  taot::v1::Plan received;
  ASSERT_TRUE(received.ParseFromString(message.SerializeAsString()));
  absl::StatusOr<Plan> decoded = PlanFromProto(received);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, plan);
}

TEST(PlanWireTest, AnEmptyPlanRoundTrips) {
  absl::StatusOr<Plan> decoded = PlanFromProto(Encoded(Plan{}));
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, Plan{});
}

TEST(PlanWireTest, ReplicasAloneRoundTrip) {
  const std::vector<Replica> replicas = {{2, 4}, {0, 1}};
  ReplicasProto message;
  ReplicasToProto(replicas, message);
  absl::StatusOr<std::vector<Replica>> decoded = ReplicasFromProto(message);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ(*decoded, replicas);
}

TEST(PlanWireTest, EveryBadFieldIsNamed) {
  const std::vector<std::pair<std::function<void(taot::v1::Plan&)>, std::string>> cases = {
      {[](taot::v1::Plan& m) { m.mutable_replicas(1)->set_expert(-1); }, "replicas[1].expert: must be >= 0, got -1"},
      {[](taot::v1::Plan& m) { m.mutable_replicas(2)->set_rank(-4); }, "replicas[2].rank: must be >= 0, got -4"},
      {[](taot::v1::Plan& m) { m.mutable_assignments(0)->set_source(-1); }, "assignments[0].source: must be >= 0"},
      {[](taot::v1::Plan& m) { m.mutable_assignments(1)->set_expert(-2); }, "assignments[1].expert: must be >= 0"},
      {[](taot::v1::Plan& m) { m.mutable_assignments(2)->set_rank(-3); }, "assignments[2].rank: must be >= 0"},
      {[](taot::v1::Plan& m) { m.mutable_assignments(2)->set_tokens(0); },
       "assignments[2].tokens: must be >= 1, got 0"},
  };
  for (const auto& [spoil, message] : cases) {
    taot::v1::Plan m = Encoded(Sample());
    spoil(m);
    const absl::Status s = PlanFromProto(m).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find(message), std::string::npos) << s;
  }
}

TEST(PlanWireTest, ContentThatIsNotWhatTheHashSaysIsDataLoss) {
  taot::v1::Plan m = Encoded(Sample());
  m.mutable_assignments(0)->set_tokens(311);
  const absl::Status s = PlanFromProto(m).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("hash: "), std::string::npos) << s;
  // A listing's plan, sent without its lists, is not a plan to apply.
  taot::v1::Plan listed = Encoded(Sample());
  listed.clear_replicas();
  listed.clear_assignments();
  EXPECT_EQ(PlanFromProto(listed).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace taot::wire

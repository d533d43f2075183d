#include "taot/wire/scorecard_wire.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

namespace taot::wire {
namespace {

// Every field a value of its own, so that a swapped pair shows.
Scorecard Distinct() {
  Scorecard s;
  s.imbalance_before_pct = 69.9;
  s.imbalance_after_pct = 2.5;
  s.target_imbalance_pct = 3.25;
  s.target_met = true;
  s.intra_node_transfers = 13;
  s.inter_node_transfers = 4;
  s.reused_replicas = 6;
  s.weighted_cost = 25.5;
  s.bytes_moved_intra_node = 122683392;
  s.bytes_moved_inter_node = 37748736;
  s.tokens_local = 40426;
  s.tokens_intra_node = 237560;
  s.tokens_inter_node = 770590;
  s.plan_time_us = 9.75;
  return s;
}

TEST(ScorecardWireTest, EveryFieldRoundTripsThroughTheBytes) {
  const Scorecard s = Distinct();
  taot::v1::PlanStats message;
  ScorecardToProto(s, message);
  taot::v1::PlanStats received;
  ASSERT_TRUE(received.ParseFromString(message.SerializeAsString()));
  absl::StatusOr<Scorecard> d = ScorecardFromProto(received);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->imbalance_before_pct, s.imbalance_before_pct);
  EXPECT_EQ(d->imbalance_after_pct, s.imbalance_after_pct);
  EXPECT_EQ(d->target_imbalance_pct, s.target_imbalance_pct);
  EXPECT_EQ(d->target_met, s.target_met);
  EXPECT_EQ(d->intra_node_transfers, s.intra_node_transfers);
  EXPECT_EQ(d->inter_node_transfers, s.inter_node_transfers);
  EXPECT_EQ(d->reused_replicas, s.reused_replicas);
  EXPECT_EQ(d->weighted_cost, s.weighted_cost);
  EXPECT_EQ(d->bytes_moved_intra_node, s.bytes_moved_intra_node);
  EXPECT_EQ(d->bytes_moved_inter_node, s.bytes_moved_inter_node);
  EXPECT_EQ(d->tokens_local, s.tokens_local);
  EXPECT_EQ(d->tokens_intra_node, s.tokens_intra_node);
  EXPECT_EQ(d->tokens_inter_node, s.tokens_inter_node);
  EXPECT_EQ(d->plan_time_us, s.plan_time_us);
}

// Readers built before fields 11 to 14 still find the first ten where they were.
TEST(ScorecardWireTest, TheOriginalFieldsKeepTheirNumbers) {
  const google::protobuf::Descriptor* d = taot::v1::PlanStats::descriptor();
  const std::vector<std::pair<std::string, int>> numbers = {
      {"imbalance_before_pct", 1}, {"imbalance_after_pct", 2},    {"intra_node_transfers", 3},
      {"inter_node_transfers", 4}, {"weighted_cost", 5},          {"target_met", 6},
      {"plan_time_us", 7},         {"bytes_moved_intra_node", 8}, {"bytes_moved_inter_node", 9},
      {"tokens_inter_node", 10},   {"target_imbalance_pct", 11},  {"reused_replicas", 12},
      {"tokens_local", 13},        {"tokens_intra_node", 14}};
  EXPECT_EQ(d->field_count(), static_cast<int>(numbers.size()));
  for (const auto& [name, number] : numbers) {
    const google::protobuf::FieldDescriptor* f = d->FindFieldByName(name);
    ASSERT_NE(f, nullptr) << name;
    EXPECT_EQ(f->number(), number) << name;
  }
}

TEST(ScorecardWireTest, BadFiguresAreNamed) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<std::pair<std::function<void(taot::v1::PlanStats&)>, std::string>> cases = {
      {[&](taot::v1::PlanStats& m) { m.set_imbalance_after_pct(nan); }, "stats.imbalance_after_pct: must be finite"},
      {[](taot::v1::PlanStats& m) { m.set_plan_time_us(INFINITY); }, "stats.plan_time_us: must be finite"},
      {[](taot::v1::PlanStats& m) { m.set_reused_replicas(-1); }, "stats.reused_replicas: must be >= 0, got -1"},
      {[](taot::v1::PlanStats& m) { m.set_tokens_local(-5); }, "stats.tokens_local: must be >= 0, got -5"},
      {[](taot::v1::PlanStats& m) { m.set_bytes_moved_inter_node(-2); }, "stats.bytes_moved_inter_node: must be >= 0"},
  };
  for (const auto& [spoil, message] : cases) {
    taot::v1::PlanStats m;
    ScorecardToProto(Distinct(), m);
    spoil(m);
    const absl::Status s = ScorecardFromProto(m).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find(message), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace taot::wire

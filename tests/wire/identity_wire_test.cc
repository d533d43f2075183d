#include "taot/wire/identity_wire.h"

#include <gtest/gtest.h>

namespace taot::wire {
namespace {

TEST(IdentityWireTest, ADaemonRoundsPlanRoundTrips) {
  const PlanIdentity identity{7, 0xfedcba9876543210u, Provenance::kDaemonRound, ""};
  taot::v1::Plan message;
  IdentityToProto(identity, message);
  EXPECT_EQ(message.version(), 7u);
  EXPECT_EQ(message.hash(), 0xfedcba9876543210u);
  EXPECT_FALSE(message.fallback());
  EXPECT_EQ(message.fallback_reason(), "");
  const PlanIdentity decoded = IdentityFromProto(message);
  EXPECT_EQ(decoded.version, 7u);
  EXPECT_EQ(decoded.hash, 0xfedcba9876543210u);
  EXPECT_EQ(decoded.provenance, Provenance::kDaemonRound);
  EXPECT_EQ(decoded.reason, "");
}

TEST(IdentityWireTest, TheFallbackIsFlaggedWithItsReason) {
  const PlanIdentity identity{0, 42, Provenance::kNoReplication, "3 of 8 ranks had not reported"};
  taot::v1::Plan message;
  IdentityToProto(identity, message);
  EXPECT_TRUE(message.fallback());
  EXPECT_EQ(message.fallback_reason(), "3 of 8 ranks had not reported");
  const PlanIdentity decoded = IdentityFromProto(message);
  EXPECT_EQ(decoded.provenance, Provenance::kNoReplication);
  EXPECT_EQ(decoded.reason, "3 of 8 ranks had not reported");
  EXPECT_TRUE(decoded.SamePlanAs(identity));
}

TEST(IdentityWireTest, APushedReplicaSetRoundTrips) {
  const PlanIdentity identity{3, 99, Provenance::kPushedReplicas, ""};
  taot::v1::Prefetch message;
  IdentityToProto(identity, message);
  EXPECT_EQ(message.version(), 3u);
  EXPECT_EQ(message.hash(), 99u);
  const PlanIdentity decoded = IdentityFromProto(message);
  EXPECT_EQ(decoded.provenance, Provenance::kPushedReplicas);
  EXPECT_TRUE(decoded.SamePlanAs(identity));
}

}  // namespace
}  // namespace taot::wire

#include "taot/planner/plan_identity.h"

#include <gtest/gtest.h>

#include <string>

namespace taot {
namespace {

// The names are what users read and match on (logs, the C ABI, Python): they never change.
TEST(PlanIdentityTest, EveryProvenanceKeepsItsName) {
  EXPECT_EQ(std::string(ProvenanceName(Provenance::kNoReplication)), "none");
  EXPECT_EQ(std::string(ProvenanceName(Provenance::kDaemonRound)), "daemon");
  EXPECT_EQ(std::string(ProvenanceName(Provenance::kPushedReplicas)), "placement");
  EXPECT_EQ(std::string(ProvenanceName(Provenance::kLocalPlan)), "local");
}

TEST(PlanIdentityTest, TheSamePlanIsTheSameVersionAndHashWhereverItCameFrom) {
  const PlanIdentity daemon{2, 0xabc, Provenance::kDaemonRound, ""};
  EXPECT_TRUE(daemon.SamePlanAs({2, 0xabc, Provenance::kLocalPlan, "the daemon failed a call recently"}));
  EXPECT_FALSE(daemon.SamePlanAs({3, 0xabc, Provenance::kDaemonRound, ""}));
  EXPECT_FALSE(daemon.SamePlanAs({2, 0xabd, Provenance::kDaemonRound, ""}));
}

TEST(PlanIdentityTest, OnlyNoReplicationIsAFallback) {
  EXPECT_TRUE(PlanIdentity{}.fallback());
  for (Provenance p : {Provenance::kDaemonRound, Provenance::kPushedReplicas, Provenance::kLocalPlan}) {
    EXPECT_FALSE((PlanIdentity{0, 0, p, ""}.fallback())) << ProvenanceName(p);
  }
}

}  // namespace
}  // namespace taot

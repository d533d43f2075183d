// The peer fixtures agree with themselves and with the cases they were planned on, so that a port
// test failing against them points at the port: every replica set is valid for its case, and the
// independent scorer's transfer counts and cost follow from it under our topology.
#include "peer_fixtures.h"

#include <map>
#include <set>

#include <gtest/gtest.h>

namespace taot::testing {
namespace {

class PeerFixtureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(PeerFixtureTest, EveryPlanIsValidForItsCaseAndScoredAsOurTopologyCostsIt) {
  const std::map<std::string, PeerPlan> plans = LoadPeerPlans(GetParam());
  const std::vector<std::string> names = PeerCaseNames();
  ASSERT_EQ(names.size(), 27u);
  ASSERT_EQ(plans.size(), names.size());
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const PlanRequest request = LoadPeerCase(name);
    ASSERT_NE(request.problem, nullptr);
    const PeerPlan& plan = plans.at(name);
    std::map<int, int> per_rank;
    std::map<int, int> per_expert;
    int intra = 0;
    int inter = 0;
    double cost = 0;
    for (const Replica& r : plan.replicas) {
      ASSERT_GE(r.expert, 0);
      ASSERT_LT(r.expert, request.experts());
      ASSERT_GE(r.rank, 0);
      ASSERT_LT(r.rank, request.ranks());
      EXPECT_NE(r.rank, request.home_of(r.expert)) << "replica on its home rank";
      ++per_rank[r.rank];
      ++per_expert[r.expert];
      const int home = request.home_of(r.expert);
      (request.topology().same_node(home, r.rank) ? intra : inter)++;
      cost += request.topology().cost(home, r.rank);
    }
    EXPECT_EQ(std::set<Replica>(plan.replicas.begin(), plan.replicas.end()).size(), plan.replicas.size());
    bool over_k = false;
    for (const auto& [rank, count] : per_rank) over_k |= count > request.slots_per_rank();
    EXPECT_EQ(over_k, plan.k_exceeded);
    int most = 0;
    for (const auto& [expert, count] : per_expert) most = std::max(most, count);
    EXPECT_EQ(most, plan.max_replicas_of_one_expert);
    EXPECT_EQ(intra, plan.intra_node_transfers);
    EXPECT_EQ(inter, plan.inter_node_transfers);
    EXPECT_DOUBLE_EQ(cost, plan.weighted_cost);
  }
}

INSTANTIATE_TEST_SUITE_P(Peers, PeerFixtureTest, ::testing::Values("taot", "echo", "llep", "eplb_g8", "eplb_gR"),
                         [](const auto& row) { return row.param; });

}  // namespace
}  // namespace taot::testing

// taot against the peers' own code (peer_fixtures.h): on every public case, asked for the
// residual a peer's code reached (EPLB: both variants, whose plans break K), `taot` reaches it too
// and moves no more weight. The figures are the independent scorer's, so this holds against the
// real peers, not against our ports of them.
#include <gtest/gtest.h>

#include "peer_fixtures.h"
#include "taot/planner/registry.h"
#include "taot/planner/run_planner.h"

namespace taot::testing {
namespace {

class TaotVsPeerTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TaotVsPeerTest, AtThePeersResidualTaotCostsNoMore) {
  const std::map<std::string, PeerPlan> peer_plans = LoadPeerPlans(GetParam());
  auto taot = PlannerRegistry::BuiltIn().Create("taot");
  ASSERT_TRUE(taot.ok()) << taot.status();
  for (const std::string& name : PeerCaseNames()) {
    SCOPED_TRACE(name);
    PlanRequest request = LoadPeerCase(name);
    ASSERT_NE(request.problem, nullptr);
    const PeerPlan& peer = peer_plans.at(name);
    request.target_imbalance_pct = peer.imbalance_after_pct;
    const auto ours = RunPlanner(**taot, request);
    ASSERT_TRUE(ours.ok()) << ours.status();
    EXPECT_LE(ours->score.imbalance_after_pct, peer.imbalance_after_pct + 1e-9);
    EXPECT_LE(ours->score.weighted_cost, peer.weighted_cost);
  }
}

INSTANTIATE_TEST_SUITE_P(Peers, TaotVsPeerTest, ::testing::Values("taot", "echo", "llep", "eplb_g8", "eplb_gR"),
                         [](const auto& row) { return row.param; });

}  // namespace
}  // namespace taot::testing

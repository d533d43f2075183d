// Each port of a peer planner against the plans the peer's own code makes on the public cases
// (peer_fixtures.h): the same replica set on at least 90% of the cases, and on every case the
// residual imbalance within 0.5 points and the weighted cost within 3% of the peer's. Cases where
// the peer itself breaks the slot limit K are not comparable (our ports keep K: a slot is
// memory); the port must still plan them validly. A comparison-only port (eplb: EPLB breaks K on
// every case, and so does its port) is compared on every case.
#include <cmath>
#include <iomanip>
#include <sstream>

#include <gtest/gtest.h>

#include "peer_fixtures.h"
#include "taot/planner/registry.h"
#include "taot/planner/run_planner.h"

namespace taot::testing {
namespace {

struct PortRow {
  std::string planner;
  std::string peer;
  PlannerParams params;
};

std::string PortRowName(const ::testing::TestParamInfo<PortRow>& info) {
  std::string name = info.param.planner + "_as_" + info.param.peer;
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

constexpr double kResidualPoints = 0.5;
constexpr double kCostFraction = 0.03;
constexpr double kSameReplicaSetFraction = 0.9;

class PeerPortTest : public ::testing::TestWithParam<PortRow> {};

TEST_P(PeerPortTest, PlansLikeThePeersOwnCode) {
  const PortRow& row = GetParam();
  const std::map<std::string, PeerPlan> peer_plans = LoadPeerPlans(row.peer);
  auto planner = PlannerRegistry::BuiltIn().Create(row.planner, row.params);
  ASSERT_TRUE(planner.ok()) << planner.status();
  int comparable = 0;
  int same_set = 0;
  std::ostringstream table;
  table << std::fixed << std::setprecision(2) << "case: ours residual/cost vs peer residual/cost, same replica set\n";
  for (const std::string& name : PeerCaseNames()) {
    SCOPED_TRACE(name);
    const PlanRequest request = LoadPeerCase(name);
    ASSERT_NE(request.problem, nullptr);
    const auto ours = RunPlanner(**planner, request);
    ASSERT_TRUE(ours.ok()) << ours.status();
    const PeerPlan& peer = peer_plans.at(name);
    if (peer.k_exceeded && !(*planner)->comparison_only()) continue;
    ++comparable;
    const bool same = ours->plan.replicas == peer.replicas;
    same_set += same;
    table << "  " << name << ": " << ours->score.imbalance_after_pct << "% / " << ours->score.weighted_cost << " vs "
          << peer.imbalance_after_pct << "% / " << peer.weighted_cost << (same ? ", same" : ", differs") << "\n";
    EXPECT_LE(std::abs(ours->score.imbalance_after_pct - peer.imbalance_after_pct), kResidualPoints);
    EXPECT_LE(std::abs(ours->score.weighted_cost - peer.weighted_cost), kCostFraction * peer.weighted_cost);
  }
  ASSERT_GT(comparable, 0);
  EXPECT_GE(same_set, std::ceil(kSameReplicaSetFraction * comparable))
      << same_set << " of " << comparable << " cases with the peer's replica set\n"
      << table.str();
}

// One row per faithful port.
const std::vector<PortRow> kPorts = {
    {"echo", "echo", {}},
    {"llep", "llep", {}},
    {"taot-paper", "taot", {}},
    {"eplb", "eplb_g8", {}},
    {"eplb", "eplb_gR", {{"groups", "R"}}},
};
INSTANTIATE_TEST_SUITE_P(Ports, PeerPortTest, ::testing::ValuesIn(kPorts), PortRowName);

}  // namespace
}  // namespace taot::testing

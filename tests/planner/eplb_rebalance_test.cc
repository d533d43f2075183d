// The port of EPLB's rebalance_experts against EPLB's own output on the public cases
// (tests/data/peers/eplb_native: phy2log, log2phy, logcnt for num_groups = 8 and = R).
#include "planners/eplb_rebalance.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "peer_fixtures.h"

namespace taot::planners {
namespace {

nlohmann::json NativeOutput(const std::string& name) {
  std::ifstream in(std::filesystem::path(TAOT_TEST_DATA_DIR) / "peers" / "eplb_native" / (name + ".json"));
  std::ostringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

// log2phy as rebalance_experts builds it: expert e's copy k is the physical slot whose phyrank
// is k; -1 pads every row to the largest copy count.
std::vector<std::vector<int>> Log2Phy(const EplbLayout& layout) {
  const int width = *std::max_element(layout.logcnt.begin(), layout.logcnt.end());
  std::vector<std::vector<int>> out(layout.logcnt.size(), std::vector<int>(static_cast<size_t>(width), -1));
  for (int p = 0; p < static_cast<int>(layout.phy2log.size()); ++p) out[layout.phy2log[p]][layout.phyrank[p]] = p;
  return out;
}

TEST(EplbRebalanceTest, LaysOutExpertsAsEplbsOwnCode) {
  for (const std::string& name : testing::PeerCaseNames()) {
    const nlohmann::json native = NativeOutput(name);
    const std::vector<int64_t> weight = native.at("weight");
    for (const char* variant : {"eplb_g8", "eplb_gR"}) {
      SCOPED_TRACE(name + " " + variant);
      const nlohmann::json& peer = native.at(variant);
      const EplbShape shape{peer.at("num_replicas"), peer.at("num_groups"), peer.at("num_nodes"), peer.at("num_gpus")};
      const auto layout = RebalanceExperts(weight, shape);
      ASSERT_TRUE(layout.ok()) << layout.status();
      EXPECT_EQ(layout->slots_per_gpu, peer.at("slots_per_gpu").get<int>());
      EXPECT_EQ(layout->phy2log, peer.at("phy2log").get<std::vector<int>>());
      EXPECT_EQ(layout->logcnt, peer.at("logcnt").get<std::vector<int>>());
      EXPECT_EQ(Log2Phy(*layout), peer.at("log2phy").get<std::vector<std::vector<int>>>());
    }
  }
}

TEST(EplbRebalanceTest, RefusesShapesThePeerAssertsOn) {
  const std::vector<int64_t> weight(12, 5);
  EXPECT_FALSE(RebalanceExperts(weight, {16, 5, 1, 4}).ok());  // 12 experts in 5 groups
  EXPECT_FALSE(RebalanceExperts(weight, {18, 4, 2, 4}).ok());  // 18 slots on 4 GPUs
  EXPECT_FALSE(RebalanceExperts(weight, {8, 4, 2, 4}).ok());   // fewer slots than experts
  EXPECT_FALSE(RebalanceExperts(weight, {16, 4, 0, 4}).ok());  // no nodes
  // Groups that do not split over the nodes take the peer's global policy.
  EXPECT_TRUE(RebalanceExperts(weight, {18, 4, 3, 6}).ok());
}

}  // namespace
}  // namespace taot::planners

#include "taot/planner/topology.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace taot {
namespace {

TEST(TopologyTest, UniformGroupsRanksAndCosts) {
  const Topology t = *Topology::Uniform(20, 8, 3.0);
  EXPECT_EQ(t.ranks(), 20);
  EXPECT_EQ(t.nodes(), 3);
  EXPECT_EQ(t.node_of(7), 0);
  EXPECT_EQ(t.node_of(8), 1);
  EXPECT_EQ(t.node_of(19), 2);
  EXPECT_THAT(t.ranks_of_node(2), ::testing::ElementsAre(16, 17, 18, 19));
  EXPECT_EQ(t.cost(3, 3), 0.0);
  EXPECT_EQ(t.cost(3, 5), 1.0);
  EXPECT_EQ(t.cost(3, 9), 3.0);
  ASSERT_TRUE(t.tree_costs().has_value());
  EXPECT_EQ(t.tree_costs()->inter, 3.0);
  EXPECT_TRUE(t.symmetric());
}

TEST(TopologyTest, NodeLabelsAreRenumberedInLabelOrder) {
  const Topology t = *Topology::FromNodes({9, 5, 9, 5}, 2.0);
  EXPECT_EQ(t.nodes(), 2);
  EXPECT_EQ(t.node_of(0), 1);
  EXPECT_EQ(t.node_of(1), 0);
  EXPECT_TRUE(t.same_node(0, 2));
  EXPECT_EQ(t.cost(0, 1), 2.0);
}

TEST(TopologyTest, MatrixThatIsATreeMetricIsDetected) {
  const Topology t = *Topology::FromMatrix({0, 0, 1, 1}, {0, 2, 5, 5,  //
                                                          2, 0, 5, 5,  //
                                                          5, 5, 0, 2,  //
                                                          5, 5, 2, 0});
  ASSERT_TRUE(t.tree_costs().has_value());
  EXPECT_EQ(t.tree_costs()->intra, 2.0);
  EXPECT_EQ(t.tree_costs()->inter, 5.0);
  EXPECT_TRUE(t.has_matrix());
}

TEST(TopologyTest, AsymmetricMatrixIsAcceptedAndStated) {
  const Topology t = *Topology::FromMatrix({0, 0, 1}, {0, 1, 4,  //
                                                       2, 0, 4,  //
                                                       3, 3, 0});
  EXPECT_FALSE(t.symmetric());
  EXPECT_FALSE(t.tree_costs().has_value());
  EXPECT_EQ(t.cost(1, 0), 2.0);
}

TEST(TopologyTest, RejectsBadInputNamingTheField) {
  EXPECT_EQ(Topology::Uniform(0).status().message(), "topology.ranks: must be a positive integer, got 0");
  EXPECT_NE(Topology::Uniform(4, 0).status().message().find("topology.ranks_per_node"), std::string::npos);
  EXPECT_NE(Topology::Uniform(4, 2, 0.5).status().message().find("topology.inter_node_cost"), std::string::npos);
  EXPECT_NE(Topology::FromNodes({0, -1}).status().message().find("topology.node_of_rank[1]"), std::string::npos);
  const auto not_square = Topology::FromMatrix({0, 0}, {0, 1, 1});
  EXPECT_NE(not_square.status().message().find("must be 2 x 2"), std::string::npos);
  const auto diagonal = Topology::FromMatrix({0, 0}, {0, 1, 1, 7});
  EXPECT_NE(diagonal.status().message().find("topology.cost_matrix[1][1]"), std::string::npos);
  const auto negative = Topology::FromMatrix({0, 0}, {0, -1, 1, 0});
  EXPECT_NE(negative.status().message().find("topology.cost_matrix[0][1]"), std::string::npos);
}

}  // namespace
}  // namespace taot

#include "taot/planner/case_json.h"

#include <gtest/gtest.h>

#include "taot/planner/plan_json.h"
#include "test_requests.h"

namespace taot {
namespace {

constexpr char kCase[] = R"({
  "topology": {"ranks": 4, "ranks_per_node": 2, "inter_node_cost": 2.5},
  "experts": 8, "slots_per_rank": 2, "expert_bytes": 1024, "target_imbalance_pct": 5,
  "resident": [{"expert": 0, "rank": 3}],
  "meta": {"anything": [1, 2]},
  "load": [[1, 2, 3, 4, 5, 6, 7, 8], [0, 0, 0, 0, 0, 0, 0, 0], [9, 9, 9, 9, 9, 9, 9, 9], [1, 1, 1, 1, 1, 1, 1, 1]]
})";

TEST(CaseJsonTest, ParsesEveryField) {
  const PlanRequest r = ParseCase(kCase).value();
  EXPECT_EQ(r.ranks(), 4);
  EXPECT_EQ(r.topology.nodes(), 2);
  EXPECT_EQ(r.topology.cost(0, 2), 2.5);
  EXPECT_EQ(r.experts, 8);
  EXPECT_EQ(r.slots_per_rank, 2);
  EXPECT_EQ(r.expert_bytes, 1024);
  EXPECT_EQ(r.target_imbalance_pct, 5.0);
  ASSERT_EQ(r.resident.size(), 1u);
  EXPECT_EQ(r.resident[0], (Replica{0, 3}));
  EXPECT_EQ(r.load.at(2, 7), 9);
}

TEST(CaseJsonTest, RoundTrips) {
  const PlanRequest r = ParseCase(kCase).value();
  const PlanRequest again = ParseCase(CaseToJson(r, R"({"seed": 1})")).value();
  EXPECT_EQ(again.load.data(), r.load.data());
  EXPECT_EQ(again.topology.node_of_rank(), r.topology.node_of_rank());
  EXPECT_EQ(again.topology.cost(1, 3), r.topology.cost(1, 3));
  EXPECT_EQ(again.resident, r.resident);
  EXPECT_EQ(again.target_imbalance_pct, r.target_imbalance_pct);
  EXPECT_EQ(again.expert_bytes, r.expert_bytes);
}

TEST(CaseJsonTest, CostMatrixAndNodeOfRank) {
  const PlanRequest r = ParseCase(R"({"topology": {"ranks": 3, "node_of_rank": [0, 0, 1],
      "cost_matrix": [[0, 1, 4], [2, 0, 4], [4, 4, 0]]}, "experts": 3, "slots_per_rank": 1,
      "load": [[1, 2, 3], [1, 2, 3], [1, 2, 3]]})")
                            .value();
  EXPECT_FALSE(r.topology.symmetric());
  EXPECT_EQ(r.topology.cost(1, 0), 2.0);
  const PlanRequest again = ParseCase(CaseToJson(r)).value();
  EXPECT_EQ(again.topology.cost(1, 0), 2.0);
}

std::string Error(const std::string& text) {
  const auto r = ParseCase(text);
  EXPECT_FALSE(r.ok()) << text;
  return std::string(r.status().message());
}

TEST(CaseJsonTest, ErrorsNameTheProblem) {
  EXPECT_NE(Error("{").find("malformed JSON"), std::string::npos);
  EXPECT_EQ(Error("[]"), "input: must be an object, got []");
  EXPECT_EQ(Error(R"({"experts": 4})"), "topology: is required");
  const std::string base = R"({"topology": {"ranks": 2}, "experts": 4, "slots_per_rank": 1, )";
  EXPECT_EQ(Error(base + R"("load": [[1, 2, 3, 4], [1, 2, 3, -4]]})"),
            "load[1][3]: must be in [0, 1099511627776], got -4");
  EXPECT_EQ(Error(base + R"("load": [[1, 2, 3, 4], [1, 2, 3.5, 4]]})"),
            "load[1][2]: must be an integer, got 3.5");
  EXPECT_EQ(Error(base + R"("load": [[1, 2, 3, 4]]})"), "load: must have 2 rows, got 1");
  EXPECT_EQ(Error(base + R"("load": [[1, 2, 3], [1, 2, 3, 4]]})"), "load[0]: must have 4 entries, got 3");
  EXPECT_EQ(Error(base + R"("lod": [], "load": [[1, 2, 3, 4], [1, 2, 3, 4]]})"), "lod: unknown field");
  EXPECT_EQ(Error(R"({"topology": {"ranks": 2}, "experts": 3, "slots_per_rank": 1, "load": [[1,1,1],[1,1,1]]})"),
            "experts: 3 is not divisible by topology.ranks 2 (every rank hosts experts/ranks experts)");
  EXPECT_EQ(Error(R"({"topology": {"ranks": 2}, "experts": 2, "slots_per_rank": -1, "load": [[1,1],[1,1]]})"),
            "slots_per_rank: must be in [0, 1048576], got -1");
  EXPECT_EQ(Error(R"({"topology": {"ranks": "2"}, "experts": 2, "slots_per_rank": 1, "load": []})"),
            "topology.ranks: must be an integer, got \"2\"");
  EXPECT_EQ(Error(R"({"topology": {"ranks": 2, "ranks_per_node": 1, "node_of_rank": [0, 1]}, "experts": 2,
      "slots_per_rank": 1, "load": [[1,1],[1,1]]})"),
            "topology: give ranks_per_node or node_of_rank, not both");
  EXPECT_EQ(Error(R"({"topology": {"ranks": 2, "cost_matrix": [[0, 1], [1, 1]]}, "experts": 2,
      "slots_per_rank": 1, "load": [[1,1],[1,1]]})"),
            "topology.cost_matrix[1][1]: the diagonal must be 0 (no move), got 1");
  EXPECT_EQ(Error(base + R"("resident": [{"expert": 0, "rank": 0}], "load": [[1, 2, 3, 4], [1, 2, 3, 4]]})"),
            "resident[0]: rank 0 is the home of expert 0 (a replica lives on a guest rank)");
}

TEST(PlanJsonTest, ParsesWhatItWrites) {
  Plan plan;
  plan.replicas = {{0, 3}, {5, 1}};
  plan.assignments = {{0, 0, 3, 7}, {2, 5, 1, 9}};
  const Plan back = ParsePlan(PlanToJson("x", plan, Scorecard{})).value();
  EXPECT_EQ(back.replicas, plan.replicas);
  EXPECT_EQ(back.assignments, plan.assignments);
  EXPECT_NE(ParsePlan(R"({"replicas": [], "assignments": [{"source": 0, "expert": 1, "rank": 2}]})")
                .status()
                .message()
                .find("assignments[0].tokens: is required"),
            std::string::npos);
}

}  // namespace
}  // namespace taot

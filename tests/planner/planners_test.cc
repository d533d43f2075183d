// Every built-in planner through the checks every planner must pass (planner_contract_test.cc),
// and the built-in registry itself.
#include <gtest/gtest.h>

#include "planner_contract.h"

namespace taot {
namespace {

INSTANTIATE_TEST_SUITE_P(AllPlanners, PlannerTest, ::testing::ValuesIn(BuiltInPlannerRows()), PlannerRowName);

TEST(RegistryTest, ListsEveryPlannerWithTaotFirst) {
  const std::vector<std::string> names = PlannerRegistry::BuiltIn().names();
  EXPECT_EQ(names, (std::vector<std::string>{"taot", "taot-paper", "echo", "llep", "eplb", "eplb-fixed-home", "lplb",
                                             "none"}));
}

TEST(RegistryTest, UnknownPlannerAndBadParametersAreClearErrors) {
  const auto unknown = PlannerRegistry::BuiltIn().Create("magic");
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(unknown.status().message().find("unknown planner 'magic' (known: taot, "), std::string::npos);
  const auto bad_key = PlannerRegistry::BuiltIn().Create("taot", {{"tarrget", "3"}});
  EXPECT_NE(bad_key.status().message().find("unknown parameter 'tarrget'"), std::string::npos);
  const auto bad_value = PlannerRegistry::BuiltIn().Create("llep", {{"min_tokens_per_gemm", "lots"}});
  EXPECT_NE(bad_value.status().message().find("parameter min_tokens_per_gemm: must be an integer"), std::string::npos);
  EXPECT_TRUE(PlannerRegistry::BuiltIn().Create("taot", {{"target_imbalance_pct", "5"}}).ok());
}

}  // namespace
}  // namespace taot

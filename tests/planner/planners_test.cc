// Every built-in planner through the checks every planner must pass (planner_contract_test.cc),
// and the built-in registry itself.
#include <gtest/gtest.h>

#include "planner_contract.h"

namespace taot {
namespace {

INSTANTIATE_TEST_SUITE_P(AllPlanners, PlannerTest, ::testing::ValuesIn(BuiltInPlannerRows()), PlannerRowName);

TEST(RegistryTest, ListsEveryPlannerWithTaotFirst) {
  const std::vector<std::string> names = PlannerRegistry::BuiltIn().names();
  EXPECT_EQ(names, (std::vector<std::string>{"taot", "taot-block", "taot-paper", "echo", "llep", "eplb",
                                             "eplb-fixed-home", "lplb", "none"}));
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
  // The hardware model's keys mean something only when it picks the target: say so by name.
  for (const char* key : {"model", "cluster", "microbatches", "nvlink_gbps"}) {
    const auto manual = PlannerRegistry::BuiltIn().Create("taot", {{key, "1"}, {"target_imbalance_pct", "5"}});
    EXPECT_NE(manual.status().message().find(std::string("parameter '") + key +
                                             "' describes the hardware that "
                                             "target_imbalance_pct=auto models; it needs target_imbalance_pct=auto"),
              std::string::npos)
        << manual.status();
  }
  EXPECT_TRUE(
      PlannerRegistry::BuiltIn().Create("taot", {{"model", "deepseek-v3"}, {"target_imbalance_pct", "auto"}}).ok());
}

}  // namespace
}  // namespace taot

// Scenario files: presets by name or as objects with overrides; the hardware fields come from the
// one table planner parameters use (hardware_fields.h), so both accept the same keys.
#include "taot/sim/scenario.h"

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "taot/planner/hardware_fields.h"

namespace taot::sim {
namespace {

class ScenarioTest : public ::testing::Test {
 protected:
  absl::StatusOr<Scenario> Read(const std::string& json) {
    const std::string path = (std::filesystem::temp_directory_path() /
                              ("taot_scenario_" + std::to_string(getpid()) + "_" +
                               ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".json"))
                                 .string();
    std::ofstream(path) << json;
    absl::StatusOr<Scenario> scenario = ReadScenario(path, DefaultScenario());
    std::filesystem::remove(path);
    return scenario;
  }
};

TEST_F(ScenarioTest, EveryHardwareFieldIsAcceptedAndSetOnItsSide) {
  for (const HardwareField& field : HardwareFields()) {
    SCOPED_TRACE(std::string(field.key));
    const bool cluster = SideOf(field) == HardwareSide::kCluster;
    const auto scenario =
        Read(std::string("{\"") + (cluster ? "cluster" : "model") + "\": {\"" + std::string(field.key) + "\": 3}}");
    ASSERT_TRUE(scenario.ok()) << scenario.status();
    Scenario copy = *scenario;
    const std::variant<double*, int*> value = FieldIn(field, copy.cluster, copy.model);
    if (double* const* d = std::get_if<double*>(&value)) {
      EXPECT_EQ(**d, 3.0);
    } else {
      EXPECT_EQ(*std::get<int*>(value), 3);
    }
  }
}

TEST_F(ScenarioTest, FieldsOnlyTheScenarioHasAreReadToo) {
  const auto scenario = Read(R"({"cluster": {"preset": "h100", "gpus_per_node": 4},
                                 "model": {"tokens_per_rank": 8192, "moe_layers": 7}})");
  ASSERT_TRUE(scenario.ok()) << scenario.status();
  EXPECT_EQ(scenario->cluster_name, "h100");
  EXPECT_EQ(scenario->cluster.gpus_per_node, 4);
  EXPECT_EQ(scenario->model.tokens_per_rank, 8192);
  EXPECT_EQ(scenario->model.moe_layers, 7);
}

TEST_F(ScenarioTest, BadFieldsAreNamed) {
  const auto unknown = Read(R"({"cluster": {"nvlink_gbs": 300}})");
  EXPECT_NE(unknown.status().message().find("cluster.nvlink_gbs: unknown field"), std::string::npos)
      << unknown.status();
  // A model field on the cluster's side is as unknown as a typo.
  const auto wrong_side = Read(R"({"cluster": {"hidden": 4096}})");
  EXPECT_NE(wrong_side.status().message().find("cluster.hidden: unknown field"), std::string::npos)
      << wrong_side.status();
  const auto range = Read(R"({"cluster": {"nics_per_gpu": 65}})");
  EXPECT_NE(range.status().message().find("cluster.nics_per_gpu: must be in [1, 64], got 65"), std::string::npos)
      << range.status();
  const auto type = Read(R"({"model": {"hidden": "big"}})");
  EXPECT_NE(type.status().message().find("model.hidden: must be an integer"), std::string::npos) << type.status();
}

}  // namespace
}  // namespace taot::sim

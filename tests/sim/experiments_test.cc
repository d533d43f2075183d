// The experiments take their planners from a registry: a planner registered beside the
// built-ins (a plugin, say) joins every comparison, after them.
#include "taot/sim/experiments.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace taot::sim {
namespace {

class ExperimentsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) / ("experiments_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    options_.out_dir = dir_.string();
    options_.quick = true;
    options_.progress = false;
    options_.python = "true";  // no plots: the CSV is what is checked
    options_.base.ranks = 8;
    options_.base.workload.layers = 1;
    options_.base.workload.steps = 1;
    options_.base.workload.microbatches = 1;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The planner column of DIR/imbalance.csv for its first swept value.
  std::vector<std::string> PlannersOfFirstPoint() const {
    std::ifstream csv(dir_ / "imbalance.csv");
    std::string line, first_value;
    std::vector<std::string> planners;
    std::getline(csv, line);  // header
    while (std::getline(csv, line)) {
      const std::string value = line.substr(0, line.find(','));
      if (first_value.empty()) first_value = value;
      if (value != first_value) break;
      const size_t from = line.find(',') + 1;
      planners.push_back(line.substr(from, line.find(',', from) - from));
    }
    return planners;
  }

  std::filesystem::path dir_;
  ExperimentOptions options_;
};

TEST_F(ExperimentsTest, TheBuiltInsRunInTheRegistrysOrder) {
  ASSERT_TRUE(RunExperiment("imbalance", options_).ok());
  EXPECT_EQ(PlannersOfFirstPoint(), (std::vector<std::string>{"taot", "taot-block", "taot-paper", "echo", "llep",
                                                              "eplb", "eplb-fixed-home", "lplb", "none"}));
}

TEST_F(ExperimentsTest, ARegisteredPlannerJoinsTheComparison) {
  PlannerRegistry registry = PlannerRegistry::BuiltIn();
  ASSERT_TRUE(registry
                  .Register({"extra", "the none planner under another name", {}},
                            [](const PlannerParams& p) { return PlannerRegistry::BuiltIn().Create("none", p); })
                  .ok());
  options_.planners = &registry;
  ASSERT_TRUE(RunExperiment("imbalance", options_).ok());
  EXPECT_EQ(PlannersOfFirstPoint(), (std::vector<std::string>{"taot", "taot-block", "taot-paper", "echo", "llep",
                                                              "eplb", "eplb-fixed-home", "lplb", "none", "extra"}));
}

TEST_F(ExperimentsTest, ARegistryWithoutTheBaselineIsRefused) {
  PlannerRegistry registry;
  ASSERT_TRUE(registry
                  .Register({"taot", "the built-in taot", {}},
                            [](const PlannerParams& p) { return PlannerRegistry::BuiltIn().Create("taot", p); })
                  .ok());
  options_.planners = &registry;
  const absl::Status s = RunExperiment("imbalance", options_);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'none'"), std::string::npos) << s;
}

}  // namespace
}  // namespace taot::sim

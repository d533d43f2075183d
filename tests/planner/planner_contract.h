// The checks every planner must pass (validity, determinism, edge cases), written once in
// planner_contract_test.cc and run over rows: a planner by name in a registry. A test binary
// links the checks (the CMake target taot_planner_contract) and instantiates PlannerTest over
// its own rows; the built-in planners are one such binary, a plugin another.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "taot/planner/registry.h"
#include "taot/planner/run_planner.h"

namespace taot {

struct PlannerRow {
  std::string name;
  // A function rather than a registry, so that a row whose registry must be built (a plugin
  // loaded) builds it when its first check runs, not when the tests are listed.
  const PlannerRegistry& (*registry)() = &PlannerRegistry::BuiltIn;
};

// Every planner of the built-in registry, in its order.
std::vector<PlannerRow> BuiltInPlannerRows();

// For gtest: a row prints as its planner's name (quoted, as gtest prints a string: ctest's test
// names end with it), and names its tests after it ('-' as '_').
void PrintTo(const PlannerRow& row, std::ostream* os);
std::string PlannerRowName(const ::testing::TestParamInfo<PlannerRow>& info);

class PlannerTest : public ::testing::TestWithParam<PlannerRow> {
 protected:
  std::unique_ptr<Planner> NewPlanner() const;
  // Runs the planner through RunPlanner, which validates the request and the plan.
  ScoredPlan Run(const PlanRequest& request) const;
};

}  // namespace taot

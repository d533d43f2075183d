// What the benchmarks' command lines (CLI11) share: the check that a planner is built in, so that
// a misspelt --planners fails before any measurement, not part-way through a table.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "taot/planner/registry.h"

namespace taot::bench {

inline CLI::Validator BuiltInPlanner() {
  return CLI::Validator(
      [](std::string& name) {
        return PlannerRegistry::BuiltIn().Create(name).ok() ? std::string() : "unknown planner " + name;
      },
      "PLANNER", "BuiltInPlanner");
}

}  // namespace taot::bench

// The example plugin (server/plugins/greedy_plugin.c), loaded as the daemon loads it, through
// every check the built-in planners pass (tests/planner/planner_contract_test.cc).
#include <cstdio>
#include <cstdlib>

#include "planner_contract.h"
#include "taot/server/plugin_planner.h"

namespace taot::server {
namespace {

// The built-in registry and the plugin, loaded once. A plugin that does not load ends the
// binary with the reason: no check could run on it.
const PlannerRegistry& WithGreedyPlugin() {
  static const PlannerRegistry registry = [] {
    PlannerRegistry r = PlannerRegistry::BuiltIn();
    absl::StatusOr<std::string> name = RegisterPlugin(TAOT_GREEDY_PLUGIN, r);
    if (!name.ok() || *name != "greedy") {
      std::fprintf(stderr, "the greedy plugin did not register as 'greedy': %s\n",
                   name.ok() ? name->c_str() : name.status().ToString().c_str());
      std::abort();
    }
    return r;
  }();
  return registry;
}

INSTANTIATE_TEST_SUITE_P(Plugins, PlannerTest, ::testing::Values(PlannerRow{"greedy", &WithGreedyPlugin}),
                         PlannerRowName);

}  // namespace
}  // namespace taot::server

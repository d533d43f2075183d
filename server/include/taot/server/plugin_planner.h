// Planner plugins (taot/planner_plugin.h) as planners of a registry: loaded once, probed, and
// then created by name like any built-in.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "taot/planner/registry.h"

namespace taot::server {

// Loads the shared library at `path` (a path, not a bare name), checks its
// taot_planner_plugin_v1, plans a small probe request with it (the plan must pass ValidatePlan),
// and registers it in `registry` under the plugin's name, which it returns. Before loading it
// into this process it checks that the file exports the entry symbol, and loads it once in a
// forked child: a library whose initialisers crash, exit or take longer than `load_timeout` is
// refused. Call it before the process starts threads (the daemon loads plugins first). Every
// failure is an error that names the path and the cause, and leaves the registry as it was.
absl::StatusOr<std::string> RegisterPlugin(const std::string& path, PlannerRegistry& registry,
                                           absl::Duration load_timeout = absl::Seconds(30));

}  // namespace taot::server

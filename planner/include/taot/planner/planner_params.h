// A planner's parameters as key=value strings, apart from the registry so that the planners
// themselves need nothing of it.
#pragma once

#include <map>
#include <string>

namespace taot {

// From a flag, a config file or an RPC; each planner parses its own and rejects unknown keys and
// bad values with an error naming the key.
using PlannerParams = std::map<std::string, std::string>;

}  // namespace taot

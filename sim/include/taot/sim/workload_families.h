// The families of workloads every planner is measured over, so that no family hides behind
// another (docs/performance.md, docs/planners.md): zipf-like at 10/30/50/70/90% initial
// imbalance; bursts of 1, 3 and R/8 experts 10x and 30x hotter than the rest; uniform (popularity
// even: what the noise alone gives). Each family sets `taot gen`'s options (case_generator.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "taot/sim/case_generator.h"

namespace taot::sim {

struct WorkloadFamily {
  std::string name;  // "zipf 30%", "3 hot x10", "uniform"
  std::function<void(CaseOptions&)> apply;
};

// The families at `ranks` ranks (R/8 hot experts depends on R), in the order above.
std::vector<WorkloadFamily> WorkloadFamilies(int ranks);

}  // namespace taot::sim

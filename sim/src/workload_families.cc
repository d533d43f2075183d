#include "taot/sim/workload_families.h"

#include <algorithm>

namespace taot::sim {

std::vector<WorkloadFamily> WorkloadFamilies(int ranks) {
  std::vector<WorkloadFamily> out;
  for (int pct : {10, 30, 50, 70, 90}) {
    out.push_back({"zipf " + std::to_string(pct) + "%", [pct](CaseOptions& o) { o.imbalance = pct / 100.0; }});
  }
  for (int hot : {1, 3, std::max(1, ranks / 8)}) {
    for (double factor : {10.0, 30.0}) {
      out.push_back(
          {std::to_string(hot) + " hot x" + std::to_string(static_cast<int>(factor)), [hot, factor](CaseOptions& o) {
             o.hot_experts = hot;
             o.hot_factor = factor;
           }});
    }
  }
  out.push_back({"uniform", [](CaseOptions& o) { o.skew = 0; }});
  return out;
}

}  // namespace taot::sim

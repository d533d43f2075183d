#include "planners/node_floors.h"

namespace taot::planners {

void NodeFloors(const PlacementState& state, std::vector<double>& floors) {
  const Topology& topo = state.topology();
  floors.assign(static_cast<size_t>(topo.nodes()), 0.0);
  if (!state.tree()) return;
  const TreeCosts& unit = state.tree_costs();
  const bool resident = !state.resident().empty();
  for (int n = 0; n < topo.nodes(); ++n) {
    int paying = 0;
    for (int r : topo.ranks_of_node(n)) paying += state.surplus(r) > 0 && (!resident || !state.HasResident(r));
    // (A node with no hot rank has no excess.)
    const bool crosses = !resident && paying > 0 && state.NodeExcess(n) > 0;
    floors[n] = paying * unit.intra + (crosses ? unit.inter - unit.intra : 0.0);
  }
}

}  // namespace taot::planners

// A floor under what covering each node costs: what lets a pass of the expert level of `taot`
// stop (taot_placement.h) before the nodes it has left to cover could reach its bound.
#pragma once

#include <vector>

#include "planners/placement_state.h"

namespace taot::planners {

// floors[n]: the least that covering node n's hot ranks can add to the cost, from `state` (the
// state after step 1 of taot_placement.h, before any node is covered), whatever other nodes'
// covers do first. On a two-level topology:
// - a hot rank sheds load only through pieces of its own experts, which no other node's cover
//   makes, and a new piece costs at least an intra-node one: each hot rank adds that, unless a
//   resident replica of one of its experts (free, and able to grow) may take its surplus;
// - where the node's surplus exceeds its open ranks' room, one of its pieces crosses nodes
//   (a hot rank's, or a costlier one of a rank with room): that adds the inter-node cost less
//   the intra-node one. Other nodes' covers only take the node's room. With resident replicas
//   anywhere, that crossing may reuse one for free, so it is not counted.
// On a general cost matrix the floors are 0 (no such bound is kept).
void NodeFloors(const PlacementState& state, std::vector<double>& floors);

}  // namespace taot::planners

// The plain covers of the expert level of `taot`: pieces placed one at a time, each the best
// the moment offers, with no look-ahead.
#pragma once

#include <cstdint>

#include "planners/placement_state.h"

namespace taot::planners {

// Grows h's pieces in `scope` as far as h's surplus, their experts and their bins allow, in
// the order they were made: a grown piece costs nothing. O(h's pieces).
void GrowPieces(PlacementState& state, int h, Scope scope);

// Covers h greedily: after GrowPieces, h's biggest expert goes into the best-fit bin in `scope`
// (PlacementState::BestFitBin), again and again, until h is covered or nothing fits. Each step
// places a piece or ends, so O(K R) steps at most, each a LargestExpert and a BestFitBin.
void CoverRank(PlacementState& state, int h, Scope scope);

// One piece inside h's node that finishes h, if some bin fits it whole: h's biggest expert into
// the tightest bin with room for all of h's surplus (after GrowPieces inside the node).
void PlaceWhole(PlacementState& state, int h);

// A piece of h's expert e to c that may exceed h's surplus; the excess becomes room on h (for
// its node-mates), so a whole expert can cross nodes in one piece.
void Export(PlacementState& state, int h, int e, int c, int64_t amount);

// Resident replicas first, as far as they help: they cost nothing. In (expert, rank) order.
void UseResident(PlacementState& state);

// When ranks are still over the cap and the room left sits in ranks with no free slot, their
// pieces grow into it, so that the room moves to the pieces' homes, which do have slots: a
// chain the remaining surplus can use. Bins in rank order, each bin's pieces in slot order.
void AbsorbCrumbs(PlacementState& state);

}  // namespace taot::planners

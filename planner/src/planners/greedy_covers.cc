#include "planners/greedy_covers.h"

#include <algorithm>

namespace taot::planners {

void GrowPieces(PlacementState& state, int h, Scope scope) {
  for (int i = state.first_piece(h); i >= 0; i = state.next_piece(i)) {
    if (state.surplus(h) == 0) return;
    const Piece& p = state.pieces()[i];
    if (!state.InScope(h, p.rank, scope)) continue;
    const int64_t add = std::min({state.surplus(h), state.left(p.expert), state.spare(p.rank)});
    if (add > 0) state.GrowPiece(h, i, add);
  }
}

void CoverRank(PlacementState& state, int h, Scope scope) {
  GrowPieces(state, h, scope);
  while (state.surplus(h) > 0) {
    const int e = state.LargestExpert(h);
    if (e < 0) return;
    const int64_t want = std::min(state.surplus(h), state.left(e));
    const int c = state.BestFitBin(h, e, want, scope);
    if (c < 0) return;
    state.AddPiece(h, e, c, std::min(want, state.spare(c)));
  }
}

void PlaceWhole(PlacementState& state, int h) {
  GrowPieces(state, h, Scope::kSameNode);
  const int64_t surplus = state.surplus(h);
  if (surplus == 0) return;
  const int e = state.LargestExpert(h);
  if (e < 0 || state.left(e) < surplus) return;
  const int c = state.BestFitBin(h, e, surplus, Scope::kSameNode);
  if (c < 0 || state.spare(c) < surplus) return;
  state.AddPiece(h, e, c, surplus);
}

void Export(PlacementState& state, int h, int e, int c, int64_t amount) {
  state.AddPiece(h, e, c, amount);
  if (state.surplus(h) < 0) state.SetRoom(h, 0, state.spare(h) - state.surplus(h));
}

void UseResident(PlacementState& state) {
  for (const Replica& r : state.resident()) {
    const int h = state.home_of(r.expert);
    const int64_t amount = std::min({state.surplus(h), state.spare(r.rank), state.left(r.expert)});
    if (amount <= 0 || state.slots(r.rank) == 0) continue;
    state.AddPiece(h, r.expert, r.rank, amount);
  }
}

void AbsorbCrumbs(PlacementState& state) {
  for (int c = 0; c < state.ranks(); ++c) {
    if (state.spare(c) == 0 || state.slots(c) > 0) continue;
    for (int i = 0; i < state.slots_per_rank() && state.spare(c) > 0; ++i) {
      const int e = state.held(c, i);
      const int h = state.home_of(e);
      const int64_t add = std::min(state.spare(c), state.left(e));
      if (add == 0) continue;
      state.GrowPiece(h, state.PieceOf(h, e, c), add);
      if (state.surplus(h) < 0) state.SetRoom(h, 0, state.spare(h) - state.surplus(h));
    }
  }
}

}  // namespace taot::planners

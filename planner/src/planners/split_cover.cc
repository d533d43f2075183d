#include "planners/split_cover.h"

#include <algorithm>

#include "planners/greedy_covers.h"

namespace taot::planners {

bool SplitCover::NextInside(int& e, int& c) const {
  const Sketch& sk = sketch_;
  e = sk.LargestExpert();
  if (e < 0) return false;
  const PlacementState& state = sk.state();
  c = -1;
  for (int x : state.topology().ranks_of_node(state.topology().node_of(sk.h()))) {
    if (sk.CanHost(e, x) && (c < 0 || sk.Room(x) > sk.Room(c))) c = x;
  }
  return c >= 0;
}

SplitCover::Split SplitCover::Plan(const PlacementState& state, int h, double bound) {
  Sketch& sk = sketch_;
  sk.Start(state, h);
  Split best;
  for (int j = 0;; ++j) {
    if (j > 0 && ((std::get<0>(best.key) == 0 && state.cost() + sk.cost() >= std::get<1>(best.key)) ||
                  state.cost() + sk.cost() > bound)) {
      break;
    }
    const Sketch::Mark inside = sk.mark();
    if (sk.rem() > 0) sk.CoverOtherNodes();
    const Key key{sk.rem(), state.cost() + sk.cost()};
    if (j == 0 || key < best.key) best = {j, key};
    sk.Rewind(inside);
    int e = -1, c = -1;
    if (sk.rem() == 0 || !NextInside(e, c)) break;
    sk.Add(e, c, std::min({sk.rem(), sk.Left(e), sk.Room(c)}), true, state.PieceCost(h, e, c));
  }
  return best;
}

void SplitCover::Apply(PlacementState& state, int h, int inside) {
  // An empty sketch: NextInside reads the state as the pieces go in.
  sketch_.Start(state, h);
  for (int j = 0; j < inside; ++j) {
    int e = -1, c = -1;
    NextInside(e, c);
    state.AddPiece(h, e, c, std::min({state.surplus(h), state.left(e), state.spare(c)}));
  }
  if (state.surplus(h) > 0) CoverRank(state, h, Scope::kOtherNodes);
}

}  // namespace taot::planners

#include "planners/two_piece_cover.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "planners/sorted_place.h"

namespace taot::planners {

void TwoPieceCover::Prepare(const PlacementState& state) {
  shapes_ = {{{0, -1, 0, 1}, {1, -1, 0, 1}, {0, 0, 0, 2}, {0, 1, 0, 2}, {1, 0, 0, 2}, {1, 1, 0, 2}}};
  same_node_bins_.reserve(static_cast<size_t>(state.ranks()));
  if (!state.tree()) return;
  // Every bin of a class costs the same, so Find can try shapes cheapest first and stop at the
  // first that covers (and those that tie with it).
  const double unit[2] = {state.tree_costs().intra, state.tree_costs().inter};
  for (Shape& sh : shapes_) sh.cost = unit[sh.cls1] + (sh.cls2 < 0 ? 0.0 : unit[sh.cls2]);
  // Stable: shapes of equal cost and pieces keep their order.
  InsertionSort(shapes_.begin(), shapes_.end(), [](const Shape& a, const Shape& b) {
    return std::make_pair(a.cost, a.pieces) < std::make_pair(b.cost, b.pieces);
  });
}

std::optional<TwoPieceCover::Option> TwoPieceCover::Find(const PlacementState& state, int h) {
  const Topology& topo = state.topology();
  const int per_rank = state.experts_per_rank();
  const int64_t rem = state.surplus(h);
  same_node_bins_.clear();
  for (int c : topo.ranks_of_node(topo.node_of(h))) {
    if (c != h && state.IsOpen(c)) same_node_bins_.push_back({state.spare(c), c});
  }
  std::sort(same_node_bins_.begin(), same_node_bins_.end());
  const std::vector<Bin>* other = &state.open_bins();
  if (!state.tree()) {
    other_node_bins_.clear();
    for (int c : topo.all_ranks()) {
      if (state.IsOpen(c) && !topo.same_node(h, c)) other_node_bins_.push_back({state.spare(c), c});
    }
    std::sort(other_node_bins_.begin(), other_node_bins_.end());
    other = &other_node_bins_;
  }
  const std::vector<Bin>* bins[2] = {&same_node_bins_, other};
  // The state's index holds h's node too (deferred, with stale rooms): class 1 skips it.
  auto in_class = [&](int cls, int c) { return cls == 0 || !topo.same_node(h, c); };
  auto roomiest = [&](int cls) {
    const std::vector<Bin>& b = *bins[cls];
    for (auto it = b.rbegin(); it != b.rend(); ++it) {
      if (in_class(cls, it->rank)) return it->rank;
    }
    return -1;
  };
  // A piece takes at most its bin's room, so two take at most twice the roomiest bin's: a burst's
  // surplus, bigger than that, has no cover here (nothing below would find one).
  int64_t most_room = same_node_bins_.empty() ? 0 : same_node_bins_.back().room;
  if (rem > 2 * most_room) {
    if (const int c = roomiest(1); c >= 0) most_room = std::max(most_room, state.spare(c));
    if (rem > 2 * most_room) return std::nullopt;
  }
  // The tightest bin of a class with room >= need that can take expert e; `skip` already gave
  // `used` tokens to another piece of this option.
  auto tightest = [&](int cls, int e, int64_t need, int skip, int64_t used) {
    const std::vector<Bin>& b = *bins[cls];
    for (auto it = std::lower_bound(b.begin(), b.end(), Bin{need, -1}); it != b.end(); ++it) {
      const int c = it->rank;
      if (!in_class(cls, c) || state.Holds(e, c)) continue;
      if (c == skip && (it->room - used < need || state.slots(c) < 2)) continue;
      return c;
    }
    return -1;
  };
  std::optional<Option> best;
  auto consider = [&](const Option& o) {
    if (!best ||
        std::make_tuple(o.cost, o.pieces, o.tightness) < std::make_tuple(best->cost, best->pieces, best->tightness)) {
      best = o;
    }
  };
  auto one_piece = [&](int cls) {
    for (int e = h * per_rank; e < (h + 1) * per_rank; ++e) {
      if (state.left(e) < rem) continue;
      const int c = tightest(cls, e, rem, -1, 0);
      if (c >= 0) consider({state.cost() + state.PieceCost(h, e, c), 1, state.spare(c), {e, c, rem}, {}});
    }
  };
  // The first piece fills the roomiest bin of class cls1, the second fits tightest in cls2.
  auto two_pieces = [&](int cls1, int cls2) {
    const int b1 = roomiest(cls1);
    if (b1 < 0) return;
    int64_t tried = -1;  // first pieces of one size leave the same rest: weigh it once
    for (int e1 = h * per_rank; e1 < (h + 1) * per_rank; ++e1) {
      if (state.left(e1) == 0 || state.Holds(e1, b1)) continue;
      const int64_t a1 = std::min({state.left(e1), state.spare(b1), rem});
      if (a1 == rem || a1 == tried) continue;
      tried = a1;
      const int64_t rem2 = rem - a1;
      // Every expert that can give rem2 finds the same bin unless it already holds it, so the
      // first one that finds a bin stands for all.
      for (int e2 = h * per_rank; e2 < (h + 1) * per_rank; ++e2) {
        const int64_t left2 = state.left(e2) - (e2 == e1 ? a1 : 0);
        if (left2 < rem2) continue;
        const int c2 = tightest(cls2, e2, rem2, e2 == e1 ? -1 : b1, a1);
        if (c2 < 0 || (c2 == b1 && e2 == e1)) continue;
        consider({state.cost() + state.PieceCost(h, e1, b1) + state.PieceCost(h, e2, c2),
                  2,
                  -state.spare(c2),
                  {e1, b1, a1},
                  {e2, c2, rem2}});
        break;
      }
    }
  };
  for (const Shape& sh : shapes_) {
    if (state.tree() && best &&
        std::make_pair(state.cost() + sh.cost, sh.pieces) > std::make_pair(best->cost, best->pieces)) {
      break;
    }
    if (sh.cls2 < 0) {
      one_piece(sh.cls1);
    } else {
      two_pieces(sh.cls1, sh.cls2);
    }
  }
  return best;
}

void TwoPieceCover::Apply(PlacementState& state, int h, const Option& option) {
  state.AddPiece(h, option.first.expert, option.first.rank, option.first.tokens);
  if (option.pieces == 2) state.AddPiece(h, option.second.expert, option.second.rank, option.second.tokens);
}

}  // namespace taot::planners

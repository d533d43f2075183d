#include "planners/chain_covers.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <tuple>

#include "planners/greedy_covers.h"

namespace taot::planners {

const std::vector<int64_t>& ChainCovers::ReceiverExperts(const PlacementState& state, int g) {
  const int per_rank = state.experts_per_rank();
  receiver_experts_.resize(static_cast<size_t>(per_rank));
  for (int i = 0; i < per_rank; ++i) receiver_experts_[i] = state.left(g * per_rank + i);
  std::sort(receiver_experts_.begin(), receiver_experts_.end(), std::greater<>());
  return receiver_experts_;
}

std::optional<Handoff> ChainCovers::PlanHandoff(const PlacementState& state, int h, Sheds sheds) {
  if (!state.tree()) return std::nullopt;
  const Topology& topo = state.topology();
  const int per_rank = state.experts_per_rank();
  const int64_t rem = state.surplus(h);
  int e = -1;
  for (int x = h * per_rank; x < (h + 1) * per_rank; ++x) {
    if (state.left(x) >= rem && (e < 0 || state.left(x) > state.left(e))) e = x;
  }
  if (e < 0) return std::nullopt;
  std::optional<Handoff> best;
  for (int n = 0; n < topo.nodes(); ++n) {
    if (n == topo.node_of(h)) continue;
    // The roomiest rank of the node leaves the least to shed: it is the receiver to weigh.
    int64_t node_room = 0;
    int g = -1;
    for (int r : topo.ranks_of_node(n)) {
      if (sheds == Sheds::kPieces) node_room -= std::max<int64_t>(state.surplus(r), 0);
      if (!state.IsOpen(r)) continue;
      node_room += state.spare(r);
      if (!state.Holds(e, r) && (g < 0 || state.spare(r) > state.spare(g))) g = r;
    }
    if (g < 0) continue;
    const int64_t overflow = rem - state.spare(g);
    if (overflow <= 0 || node_room - state.spare(g) < overflow) continue;
    // g sheds its biggest experts to its node-mates, one intra-node piece each.
    const std::vector<int64_t>& own = ReceiverExperts(state, g);
    int pieces = 0;
    int64_t shed = 0;
    while (pieces < per_rank && shed < overflow) shed += own[pieces++];
    if (shed < overflow) continue;
    const double cost = state.PieceCost(h, e, g) + pieces * state.tree_costs().intra;
    if (!best || std::make_tuple(cost, overflow, g) < std::make_tuple(best->cost, best->overflow, best->receiver)) {
      best = Handoff{e, g, rem, overflow, cost};
    }
  }
  return best;
}

bool ChainCovers::CanHandOff(const PlacementState& state, int h) {
  const int e = state.LargestExpert(h);
  if (!state.tree() || e < 0) return false;
  for (int r = 0; r < state.ranks(); ++r) {
    if (!state.topology().same_node(r, h) && state.IsOpen(r) && 3 * state.spare(r) >= state.left(e)) return false;
  }
  return true;
}

const std::vector<int64_t>& ChainCovers::WholeSheds(const PlacementState& state, int g) {
  const std::vector<int64_t>& own = ReceiverExperts(state, g);
  shed_pieces_.clear();
  for (const int64_t tokens : own) {
    if (tokens == 0) break;
    auto bin = std::find_if(mate_bins_.begin(), mate_bins_.end(),
                            [&](const auto& m) { return m.second > 0 && m.first >= tokens; });
    if (bin == mate_bins_.end()) break;
    bin->first -= tokens;
    --bin->second;
    shed_pieces_.push_back(tokens);
  }
  return shed_pieces_;
}

const std::vector<int64_t>& ChainCovers::PieceSheds(const PlacementState& state, int g) {
  std::vector<int64_t>& own = receiver_left_;
  own = ReceiverExperts(state, g);
  shed_pieces_.clear();
  for (auto& [room, slots] : mate_bins_) {
    for (; slots > 0 && room > 0; --slots) {
      const auto fullest = std::max_element(own.begin(), own.end());
      if (fullest == own.end() || *fullest == 0) break;
      const int64_t piece = std::min(room, *fullest);
      *fullest -= piece;
      room -= piece;
      shed_pieces_.push_back(piece);
    }
  }
  return shed_pieces_;
}

std::optional<Handoff> ChainCovers::PlanCarry(const PlacementState& state, int h, int e, Sheds sheds) {
  if (!state.tree()) return std::nullopt;
  const Topology& topo = state.topology();
  std::optional<Handoff> best;
  std::vector<std::pair<int64_t, int>>& mates = mate_bins_;
  for (int n = 0; n < topo.nodes(); ++n) {
    if (n == topo.node_of(h)) continue;
    int g = -1;
    int64_t pending = 0;  // earlier receivers' sheds will use the node's room too
    for (int r : topo.ranks_of_node(n)) {
      pending += std::max<int64_t>(state.surplus(r), 0);
      if (state.IsOpen(r) && !state.Holds(e, r) && (g < 0 || state.spare(r) > state.spare(g))) g = r;
    }
    if (g < 0) continue;
    mates.clear();
    for (int r : topo.ranks_of_node(n)) {
      if (r != g && state.IsOpen(r)) mates.push_back({state.spare(r), state.slots(r)});
    }
    std::sort(mates.begin(), mates.end(), std::greater<>());
    for (auto& [room, slots] : mates) {
      const int64_t taken = std::min(room, pending);
      room -= taken;
      pending -= taken;
    }
    const std::vector<int64_t>& made = sheds == Sheds::kWhole ? WholeSheds(state, g) : PieceSheds(state, g);
    const int64_t shed = std::accumulate(made.begin(), made.end(), int64_t{0});
    const int64_t tokens = std::min(state.left(e), state.spare(g) + shed);
    const int64_t overflow = tokens - state.spare(g);
    if (overflow <= 0) continue;
    int pieces = 0;
    for (int64_t covered = 0; covered < overflow; covered += made[pieces++]) {
    }
    const double cost = state.PieceCost(h, e, g) + pieces * state.tree_costs().intra;
    if (!best || std::make_tuple(-tokens, cost, g) < std::make_tuple(-best->tokens, best->cost, best->receiver)) {
      best = Handoff{e, g, tokens, overflow, cost};
    }
  }
  return best;
}

void ChainCovers::ApplyHandoff(PlacementState& state, int h, const Handoff& handoff) {
  state.AddPiece(h, handoff.expert, handoff.receiver, handoff.tokens);
  const int g = handoff.receiver;
  state.SetRoom(g, -state.spare(g), 0);
  state.AddDebt(handoff.cost - state.PieceCost(h, handoff.expert, g));
}

void ChainCovers::ApplyCarry(PlacementState& state, int h, const Handoff& carry) {
  Export(state, h, carry.expert, carry.receiver, carry.tokens);
  const int g = carry.receiver;
  state.SetRoom(g, -state.spare(g), 0);
  state.AddDebt(carry.cost - state.PieceCost(h, carry.expert, g));
}

}  // namespace taot::planners

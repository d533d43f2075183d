#include "planners/chain_covers.h"

#include <algorithm>
#include <functional>
#include <span>
#include <tuple>

#include "planners/greedy_covers.h"
#include "planners/sorted_place.h"

namespace taot::planners {

const std::vector<ChainCovers::Own>& ChainCovers::ReceiverExperts(const PlacementState& state, int g) {
  const int per_rank = state.experts_per_rank();
  receiver_left_.resize(static_cast<size_t>(per_rank));
  for (int i = 0; i < per_rank; ++i) receiver_left_[i] = {state.left(g * per_rank + i), g * per_rank + i};
  receiver_has_pieces_ = state.first_piece(g) >= 0;
  std::sort(receiver_left_.begin(), receiver_left_.end(),
            [](const Own& a, const Own& b) { return std::tie(b.tokens, a.expert) < std::tie(a.tokens, b.expert); });
  return receiver_left_;
}

std::optional<Handoff> ChainCovers::PlanHandoff(const PlacementState& state, int h, Sheds sheds,
                                                const CarryCache* cache) {
  if (!state.tree()) return std::nullopt;
  const Topology& topo = state.topology();
  const int per_rank = state.experts_per_rank();
  const int64_t rem = state.surplus(h);
  // No receiver's room and sheds reach past the cap (chain_covers.h): a burst's surplus has none.
  if (rem > state.cap()) return std::nullopt;
  int e = -1;
  for (int x = h * per_rank; x < (h + 1) * per_rank; ++x) {
    if (state.left(x) >= rem && (e < 0 || state.left(x) > state.left(e))) e = x;
  }
  if (e < 0) return std::nullopt;
  std::optional<Handoff> best;
  for (int n = 0; n < topo.nodes(); ++n) {
    if (n == topo.node_of(h)) continue;
    // A node the cache holds under its stamp is read from there; any other is scanned (a survey
    // costs more than a scan where the node will change before it is read again).
    int g = -1;
    int64_t node_room = 0;
    const CarryCache::Node* node = cache != nullptr && static_cast<size_t>(n) < cache->nodes_.size()
                                       ? &cache->nodes_[static_cast<size_t>(n)]
                                       : nullptr;
    if (node != nullptr && node->stamp == state.node_stamp(n)) {
      // Roomiest first, the lower rank among equals, as the scan below picks.
      const auto open = std::find_if(node->open.begin(), node->open.end(),
                                     [&](const std::pair<int64_t, int>& bin) { return !state.Holds(e, -bin.second); });
      if (open != node->open.end()) g = -open->second;
      node_room = node->room - (sheds == Sheds::kPieces ? node->owed : 0);
    } else {
      for (int r : topo.ranks_of_node(n)) {
        if (sheds == Sheds::kPieces) node_room -= std::max<int64_t>(state.surplus(r), 0);
        if (!state.IsOpen(r)) continue;
        node_room += state.spare(r);
        if ((g < 0 || state.spare(r) > state.spare(g)) && !state.Holds(e, r)) g = r;
      }
    }
    if (g < 0) continue;
    const int64_t overflow = rem - state.spare(g);
    if (overflow <= 0 || node_room - state.spare(g) < overflow) continue;
    // g sheds its biggest experts to its node-mates, one intra-node piece each; it cannot shed
    // more than all it holds, which most receivers weighed here do not reach (sorting is then
    // wasted).
    if (state.TokensLeft(g) < overflow) continue;
    const std::vector<Own>& own = ReceiverExperts(state, g);
    int pieces = 0;
    int64_t shed = 0;
    while (shed < overflow) shed += own[pieces++].tokens;
    const double cost = state.PieceCost(h, e, g) + pieces * state.tree_costs().intra;
    if (!best || std::make_tuple(cost, overflow, g) < std::make_tuple(best->cost, best->overflow, best->receiver)) {
      best = Handoff{e, g, rem, overflow, cost, {}};
    }
  }
  return best;
}

bool ChainCovers::CanHandOff(const PlacementState& state, int h) {
  const int e = state.LargestExpert(h);
  if (!state.tree() || e < 0) return false;
  // With no bin elsewhere (-1), any expert can.
  return 3 * state.RoomiestElsewhere(state.topology().node_of(h)) < state.left(e);
}

void ChainCovers::ShedWhole(const PlacementState& state, bool past_misfits) {
  for (Own& own : receiver_left_) {
    if (own.tokens == 0) break;
    // An expert bigger than every mate's room fits none, unsearched (a burst's receiver's
    // experts are bigger than any mate's room).
    auto mate = mates_.end();
    if (own.tokens <= most_mate_room_) {
      mate = std::find_if(mates_.begin(), mates_.end(), [&](const Mate& m) {
        return m.slots > 0 && m.room >= own.tokens && !MateHolds(state, own.expert, m.rank);
      });
    }
    if (mate == mates_.end()) {
      if (past_misfits) continue;
      break;
    }
    mate->room -= own.tokens;
    --mate->slots;
    sheds_.push_back({own.expert, mate->rank, own.tokens});
    own.tokens = 0;
  }
}

void ChainCovers::ShedPieces(const PlacementState& state) {
  ShedWhole(state, true);
  SortMates();
  for (Mate& mate : mates_) {
    for (; mate.slots > 0 && mate.room > 0; --mate.slots) {
      // The first of the fullest experts the mate does not hold.
      Own* fullest = nullptr;
      int64_t most = 0;
      for (Own& own : receiver_left_) {
        if (own.tokens > most && !MateHolds(state, own.expert, mate.rank)) {
          fullest = &own;
          most = own.tokens;
        }
      }
      if (!fullest) break;
      const int64_t piece = std::min(mate.room, fullest->tokens);
      fullest->tokens -= piece;
      mate.room -= piece;
      sheds_.push_back({fullest->expert, mate.rank, piece});
    }
  }
}

void ChainCovers::SortMates() {
  // The mates come nearly sorted (from the survey's order, or with a few rooms shrunk by whole
  // sheds), a handful of them.
  InsertionSort(mates_.begin(), mates_.end(), [](const Mate& a, const Mate& b) {
    return std::tie(b.room, b.slots, a.rank) < std::tie(a.room, a.slots, b.rank);
  });
}

void ChainCovers::Survey(const PlacementState& state, int n, Sheds sheds, CarryCache::Node& node) const {
  node.stamp = state.node_stamp(n);
  node.sheds = sheds;
  node.owed = 0;  // earlier receivers' sheds will use the node's room too
  node.room = 0;
  node.open.clear();
  node.weighed = 0;
  std::span<const int> ranks = state.topology().ranks_of_node(n);
  node.open.reserve(ranks.size());  // once, not by doubling
  for (int r : ranks) {
    node.owed += std::max<int64_t>(state.surplus(r), 0);
    if (!state.IsOpen(r)) continue;
    node.room += state.spare(r);
    node.open.push_back({state.spare(r), -r});
  }
  std::sort(node.open.begin(), node.open.end(), std::greater<>());
}

void ChainCovers::ReceiverSheds(const PlacementState& state, const CarryCache::Node& node, int g, Sheds sheds) {
  // The survey's open ranks, roomiest first, are the mates in their order but for ties of room.
  mates_.clear();
  for (const auto& [room, minus_rank] : node.open) {
    if (-minus_rank != g) mates_.push_back({room, state.slots(-minus_rank), -minus_rank});
  }
  SortMates();
  // The node's own surplus takes the roomiest rooms first; a mate left no room takes no shed.
  int64_t pending = node.owed;
  size_t kept = 0;
  most_mate_room_ = 0;
  for (Mate& mate : mates_) {
    const int64_t taken = std::min(mate.room, pending);
    mate.room -= taken;
    pending -= taken;
    if (mate.room > 0) mates_[kept++] = mate;
    most_mate_room_ = std::max(most_mate_room_, mate.room);
  }
  mates_.resize(kept);
  ReceiverExperts(state, g);
  sheds_.clear();
  if (sheds == Sheds::kWhole) {
    ShedWhole(state, false);
  } else {
    ShedPieces(state);
  }
}

bool ChainCovers::RoomCannotReach(const PlacementState& state, const CarryCache::Node& node, int e, int g, int64_t most,
                                  int64_t best_reach) {
  return std::min({state.left(e), state.spare(g) + MatesRoom(state, node, g), most}) < best_reach;
}

bool ChainCovers::CannotBeat(const PlacementState& state, const CarryCache::Node& node, int h, int e, int g,
                             Sheds sheds, int64_t most, const std::tuple<int64_t, double, int>& best) {
  // Its sheds take its mates' room left after the node's own surplus, and its own tokens. (Its
  // tokens left and its biggest expert in one pass: TokensLeft and LargestExpert apart cost a
  // burst's plan 1% more.)
  const auto& [best_reach, best_cost, best_receiver] = best;
  const int64_t mates_room = MatesRoom(state, node, g);
  const int per_rank = state.experts_per_rank();
  int64_t holds = 0, biggest_own = 0;
  for (int x = g * per_rank; x < (g + 1) * per_rank; ++x) {
    holds += state.left(x);
    biggest_own = std::max(biggest_own, state.left(x));
  }
  const int64_t reach = std::min({state.left(e), state.spare(g) + std::min(mates_room, holds), most});
  // The cost below decides only between equal reaches.
  if (-reach != best_reach) return -reach > best_reach;
  // At the best's reach it sheds the overflow in pieces no bigger than a mate's room or an
  // expert of its own, each a new intra-node piece unless a resident replica takes it.
  const int64_t overflow = -best_reach - state.spare(g);
  const int64_t roomiest_mate = -node.open[0].second != g ? node.open[0].first
                                : node.open.size() > 1    ? node.open[1].first
                                                          : 0;
  const int64_t biggest_shed = std::min(roomiest_mate, biggest_own);
  if (overflow <= 0 || biggest_shed <= 0) return false;
  // Summed shed by shed as PlanCarry sums a carry's cost, so that rounding keeps the floor under
  // it (adding what is not negative never lowers a sum); no receiver makes more sheds than its
  // open mates have slots.
  const int64_t most_sheds = static_cast<int64_t>(node.open.size() - 1) * state.slots_per_rank();
  const int64_t least_sheds = std::min((overflow + biggest_shed - 1) / biggest_shed, most_sheds);
  const double shed_cost = sheds == Sheds::kPieces && state.HasResident(g) ? 0.0 : state.tree_costs().intra;
  double floor = state.PieceCost(h, e, g);
  for (int64_t i = 0; i < least_sheds; ++i) floor += shed_cost;
  return std::make_tuple(-reach, floor, g) > best;
}

const Handoff* ChainCovers::PlanCarry(const PlacementState& state, int h, int e, Sheds sheds, int64_t most,
                                      CarryCache* cache) {
  if (!state.tree()) return nullptr;
  const Topology& topo = state.topology();
  Handoff& best = carry_;
  bool found = false;
  int64_t best_reach = 0;
  if (cache != nullptr) cache->nodes_.resize(static_cast<size_t>(topo.nodes()));
  for (int n = 0; n < topo.nodes(); ++n) {
    if (n == topo.node_of(h)) continue;
    CarryCache::Node& node = cache != nullptr ? cache->nodes_[static_cast<size_t>(n)] : survey_;
    if (cache == nullptr || node.stamp != state.node_stamp(n) || node.sheds != sheds) Survey(state, n, sheds, node);
    // Whole sheds weigh the roomiest rank only (it leaves the least to shed); pieces weigh the
    // few roomiest, since which experts a receiver holds decides how many pieces its sheds take
    // (measured on the peer_match bursts: all eight of a node take 1.7x the time at EP64 and
    // save 2.7% of the cost there). A rank that holds e already cannot receive it.
    const size_t most_weighed = sheds == Sheds::kWhole ? size_t{1} : kReceiversWeighed;
    size_t weighed = 0;
    for (size_t c = 0; c < node.open.size() && weighed < most_weighed; ++c) {
      const int g = -node.open[c].second;
      if (state.Holds(e, g)) continue;
      ++weighed;
      // The room alone rules most receivers out (those of a burst's carries, whose reach the
      // best's equals), and with them the node's roomier-first rest.
      if (bounded_ && found && RoomCannotReach(state, node, e, g, most, best_reach)) break;
      const auto end = node.receivers.begin() + static_cast<std::ptrdiff_t>(node.weighed);
      auto known =
          std::find_if(node.receivers.begin(), end, [g](const CarryCache::Receiver& x) { return x.rank == g; });
      if (known == end) {
        // Sheds known already cost little to read; new ones are weighed only where the bounds
        // leave the receiver a chance.
        if (bounded_ && found &&
            CannotBeat(state, node, h, e, g, sheds, most, std::make_tuple(-best_reach, best.cost, best.receiver))) {
          continue;
        }
        ReceiverSheds(state, node, g, sheds);
        if (node.weighed == node.receivers.size()) node.receivers.emplace_back();
        known = node.receivers.begin() + static_cast<std::ptrdiff_t>(node.weighed++);
        known->rank = g;
        known->sheds.assign(sheds_.begin(), sheds_.end());
        known->terms.clear();
        known->total = 0;
        for (const Shed& x : sheds_) {
          known->terms.push_back(
              {sheds == Sheds::kWhole ? state.tree_costs().intra : state.PieceCost(g, x.expert, x.mate),
               x.tokens == state.left(x.expert)});
          known->total += x.tokens;
        }
      }
      const std::vector<Shed>& own_sheds = known->sheds;
      const std::vector<CarryCache::Receiver::Terms>& terms = known->terms;
      int64_t tokens = std::min({state.left(e), state.spare(g) + known->total, most});
      int64_t overflow = tokens - state.spare(g);
      if (overflow <= 0) continue;
      // The sheds that cover the overflow, the last trimmed to what is left of it; with pieces, a
      // whole expert that crosses `most` goes whole and the carry grows to match (while e has the
      // tokens): one piece fewer to split, and the receiver's mates keep their rooms whole.
      size_t used = 0;
      double cost = state.PieceCost(h, e, g);
      int64_t covered = 0, last = 0;
      for (; covered < overflow; ++used) {
        const Shed& x = own_sheds[used];
        const bool whole =
            sheds == Sheds::kPieces && terms[used].whole && state.spare(g) + covered + x.tokens <= state.left(e);
        last = whole ? x.tokens : std::min(x.tokens, overflow - covered);
        covered += last;
        cost += terms[used].cost;
      }
      if (covered > overflow) {
        tokens += covered - overflow;
        overflow = covered;
      }
      // With pieces every receiver that reaches `most` does the job: the cheapest wins.
      const int64_t reach = sheds == Sheds::kPieces ? std::min(tokens, most) : tokens;
      if (!found || std::make_tuple(-reach, cost, g) < std::make_tuple(-best_reach, best.cost, best.receiver)) {
        found = true;
        best.expert = e;
        best.receiver = g;
        best.tokens = tokens;
        best.overflow = overflow;
        best.cost = cost;
        best_reach = reach;
        // Into the member's own memory: no allocation once it has grown. Of the sheds used, only
        // the last can be trimmed.
        best.sheds.assign(own_sheds.begin(),
                          own_sheds.begin() + static_cast<std::ptrdiff_t>(sheds == Sheds::kPieces ? used : 0));
        if (!best.sheds.empty()) best.sheds.back().tokens = last;
      }
    }
  }
  return found ? &best : nullptr;
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
  if (carry.sheds.empty()) {
    state.AddDebt(carry.cost - state.PieceCost(h, carry.expert, g));
    return;
  }
  for (const Shed& x : carry.sheds) state.AddPiece(g, x.expert, x.mate, x.tokens);
}

}  // namespace taot::planners
